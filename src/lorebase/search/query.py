"""What a search takes (:class:`SearchRequest`) and gives back (:class:`SearchResponse` of
cited hits, each carrying its :class:`~lorebase.types.Provenance`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from lorebase.errors import InvalidInput
from lorebase.fields import Condition, checked
from lorebase.search.bounds import (
    LANGUAGE_PATTERN,
    MAX_LANGUAGE_CHARS,
    MAX_NEIGHBORS,
    MAX_PATH_PREFIX_CHARS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    Mode,
)
from lorebase.search.fusion import DEFAULT_FUSION, FUSIONS
from lorebase.types import Provenance

# What the rerank step did (see lorebase.search.reranking): reranked, or why not.
RerankStatus = Literal[
    "reranked", "rerank_skipped", "rerank_timeout", "reranker_unavailable", "reranker_refused"
]


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One query over one or more knowledge bases: by id (``kb_ids``, what the application
    service sends, a name being unique only within a scope), else by name (each must name
    one base); neither means all of them. ``no_answer_threshold`` overrides the relevance
    floor's cosine for this search (an evaluation trying another); None: the configured one.

    ``path_prefix``: only documents whose path as stored, what a hit shows (``folder/src/``,
    the followed folder's label first), starts with it, case-sensitive. ``language``: only
    source files in that language (``python``; case-insensitive; every passage of the
    document is code in it, so a Markdown page with a fenced example is not one).
    ``filters``: only documents whose fields meet every condition (``tags=policy``,
    ``date>=2025-01-01``; see :mod:`lorebase.fields`). All restrict the candidates before
    ranking, together with ``document_ids``.

    ``collapse`` (the default): one hit per document, its best passage, with the document's
    other matching passages attached (``Hit.passages``); ``top_k`` counts documents. False:
    every passage a hit of its own. ``explain``: the response carries what each arm returned
    and the fused order before the floor (:class:`Explanation`; evaluation)."""

    query: str
    knowledge_bases: tuple[str, ...] = ()
    top_k: int = 10
    mode: Mode = Mode.HYBRID
    rerank: bool = False
    document_ids: tuple[str, ...] | None = None
    neighbors: int = 0
    fusion: str = DEFAULT_FUSION
    kb_ids: tuple[int, ...] = ()
    no_answer_threshold: float | None = None
    path_prefix: str | None = None
    language: str | None = None
    collapse: bool = True
    explain: bool = False
    filters: tuple[Condition, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidInput("query must be a non-empty string")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"query must be at most {MAX_QUERY_CHARS} characters")
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be between 1 and {MAX_TOP_K}")
        if not 0 <= self.neighbors <= MAX_NEIGHBORS:
            raise InvalidInput(f"neighbors must be between 0 and {MAX_NEIGHBORS}")
        threshold = self.no_answer_threshold
        if threshold is not None and not threshold <= 1:  # -inf: no floor; NaN: refused
            raise InvalidInput("no_answer_threshold is a cosine, at most 1")
        if self.fusion not in FUSIONS:
            raise InvalidInput(f"fusion must be one of: {', '.join(sorted(FUSIONS))}")
        if self.path_prefix is not None:
            _check_path_prefix(self.path_prefix)
        if self.language is not None:
            object.__setattr__(self, "language", _checked_language(self.language))
        object.__setattr__(self, "filters", tuple(checked(self.filters)))
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            raise InvalidInput("mode must be one of: hybrid, keyword, dense") from None


def _check_path_prefix(prefix: object) -> None:
    if not isinstance(prefix, str) or not prefix:
        raise InvalidInput("path_prefix must be a non-empty string")
    if len(prefix) > MAX_PATH_PREFIX_CHARS:
        raise InvalidInput(f"path_prefix must be at most {MAX_PATH_PREFIX_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in prefix):
        raise InvalidInput("path_prefix must not contain NUL or other control characters")


def _checked_language(language: object) -> str:
    """The language in lower case; ``InvalidInput`` unless it is a short identifier."""
    if not isinstance(language, str) or not language:
        raise InvalidInput("language must be a non-empty string")
    lowered = language.lower()
    if len(lowered) > MAX_LANGUAGE_CHARS or not LANGUAGE_PATTERN.fullmatch(lowered):
        raise InvalidInput(
            f"language must be a language name such as python (at most {MAX_LANGUAGE_CHARS} "
            "letters, digits and _ + # . -)"
        )
    return lowered


@dataclass(frozen=True, slots=True)
class StepScore:
    """A hit's score in one step and its rank there (from 1). A dense score with rank None
    was read for fusion: the dense arm did not return that passage among its candidates."""

    score: float
    rank: int | None


@dataclass(frozen=True, slots=True)
class Neighbor:
    chunk_id: str
    ordinal: int
    text: str


@dataclass(frozen=True, slots=True)
class Hit:
    """One cited passage with its provenance and its score in every step; with a collapsed
    search, the best passage of its document, and the document's other matching passages
    (``passages``, best first, each a hit without passages of its own)."""

    chunk_id: str
    provenance: Provenance
    text: str
    snippet: str
    scores: dict[str, StepScore]
    before: tuple[Neighbor, ...] = ()
    after: tuple[Neighbor, ...] = ()
    passages: tuple[Hit, ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()
    """Where the question's words stand in ``snippet``: ``(start, end)`` character offsets
    (whole words, never stop words; see :mod:`lorebase.search.snippets`)."""
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """What is known about its document — tags, author, dates, any key of its metadata — by
    field (see :mod:`lorebase.fields`)."""

    @property
    def best_step(self) -> str:
        """The last step that ordered this hit: ``rerank``, else ``fused``, else the one arm
        that ran (``keyword`` or ``dense``)."""
        for step in ("rerank", "fused"):
            if step in self.scores:
                return step
        return next(iter(self.scores))

    @property
    def best_score(self) -> StepScore:
        """The score of :attr:`best_step` (each step has its own scale)."""
        return self.scores[self.best_step]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One passage an arm returned (or the fusion ordered), with its document and score."""

    chunk_id: str
    document_id: str
    score: float


@dataclass(frozen=True, slots=True)
class Explanation:
    """How a search ranked, for evaluation: each arm's candidates as it returned them (best
    first; the dense arm merged over models), the fused order of every candidate before the
    relevance floor, and the candidates the floor kept, in that order."""

    keyword: tuple[Candidate, ...] = ()
    dense: tuple[Candidate, ...] = ()
    fused: tuple[Candidate, ...] = ()
    supported: tuple[Candidate, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResponse:
    """The hits, best first, and how they were found.

    ``warnings``: how the search degraded, each ``reason: text`` (``embedder_unavailable``,
    ``rerank_timeout``, ...). ``notes``: the same form, for what is no fault
    (``rerank_skipped``). ``rerank``: what the rerank step did when it was asked for —
    ``reranked``, or the reason code of the note or warning that says why not; None when it was
    not asked for. :attr:`no_answer`: nothing relevant was found (no hit passed the relevance
    floor; see :mod:`lorebase.search.floor`): do not answer from this search. ``identities``:
    the embedding identity each base's dense ranking came from, by base id (a base searched by
    keyword only is not in it): one identity per base, never two."""

    hits: list[Hit]
    mode: Mode
    timings_ms: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rerank: RerankStatus | None = None
    identities: dict[int, str] = field(default_factory=dict)
    explanation: Explanation | None = None
    damaged: tuple[int, ...] = ()  # bases whose keyword index is damaged and being rebuilt

    @property
    def no_answer(self) -> bool:
        """Nothing relevant was found: no hit is left (after the relevance floor)."""
        return not self.hits


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a :func:`time.perf_counter` reading), as a response's
    ``timings_ms`` gives them."""
    return round((time.perf_counter() - started) * 1000, 3)
