"""Asking a question set through the real search and measuring the answers.

:func:`run_task` asks every question of an :class:`EvalTask` in every mode, ranks the
documents of the hits (each document once, where its first chunk came; enough hits are asked
for to fill the first k documents) and reports the metrics of :mod:`lorebase.eval.metrics` per
mode at the first k documents, with no-answer accuracy, citation coverage (over every hit), the
latency of those searches (one untimed question first loads the model and vectors) and, with
``rerank``, how often the reranker's gate skipped it and the time that saved.

Ranking is measured on the whole ranking, without the relevance floor (as published figures
and peers are); the floor is measured on its own as no-answer accuracy: whether the search's
own rule (:func:`lorebase.search.floor.is_supported`: a hit the keyword arm found, or a dense
score at least the threshold) left any hit, over unanswerable questions, and over answerable
ones (``answerable_kept``: what the floor costs).
Preparing tasks (indexing) and keeping results is :mod:`lorebase.eval.tasks`.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lorebase.embed.registry import kb_embedders
from lorebase.errors import InvalidInput
from lorebase.eval import metrics
from lorebase.eval.datasets import Question
from lorebase.ingest.pipeline import IngestReport
from lorebase.search.floor import NO_FLOOR, is_supported
from lorebase.search.fusion import FUSIONS
from lorebase.search.query import MAX_QUERY_CHARS, MAX_TOP_K, Hit, Mode, SearchResponse

if TYPE_CHECKING:
    from lorebase.app import Lorebase

RESULT_SCHEMA = 1
RANK_DEPTH = 10
"""MRR and nDCG are reported at 10, so every question retrieves at least this deep."""
HITS_PER_DOCUMENT = 3
"""Hits asked for per document a metric looks at: a document cut into several chunks can take
several hits, and metrics count documents. Three fill the first k documents comfortably where
documents average 1.1-1.4 chunks (Cranfield, CISI); the search's limit caps it at 100 hits."""
DEFAULT_KS = (10,)
ALL_MODES = (Mode.KEYWORD, Mode.DENSE, Mode.HYBRID)


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """What to measure: modes, the cut-offs of recall and precision, the relevance floor's
    cosine (None: the search's own, ``Settings.search``), whether ranking is measured on the
    answers as the search gives them (``floor``: what the floor cuts is missing, and hybrid
    fuses only supported evidence) rather than on the whole ranking, the fusion hybrid
    searches use, and whether the reranker reorders the candidates."""

    modes: tuple[Mode, ...] = ALL_MODES
    ks: tuple[int, ...] = DEFAULT_KS
    no_answer_threshold: float | None = None
    floor: bool = False
    fusion: str = "rrf"
    rerank: bool = False

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise InvalidInput(f"fusion must be one of: {', '.join(sorted(FUSIONS))}")
        if not self.modes:
            raise InvalidInput("choose at least one mode")
        object.__setattr__(self, "modes", tuple(dict.fromkeys(Mode(m) for m in self.modes)))
        if not self.ks or not all(1 <= k <= MAX_TOP_K for k in self.ks):
            raise InvalidInput(f"every k must be between 1 and {MAX_TOP_K}")
        object.__setattr__(self, "ks", tuple(sorted(set(self.ks))))

    @property
    def depth(self) -> int:
        """How many hits each question asks for (see :data:`HITS_PER_DOCUMENT`)."""
        return min(MAX_TOP_K, HITS_PER_DOCUMENT * max(*self.ks, RANK_DEPTH))


@dataclass(frozen=True, slots=True)
class EvalTask:
    """A question set bound to the knowledge base that answers it."""

    dataset: str
    kind: str  # "beir" or "evals"
    source: str
    kb: str
    questions: tuple[Question, ...]
    document_of: Callable[[str], str]  # a hit's document path -> the id relevance uses
    notes: tuple[str, ...] = ()
    index: IngestReport | None = None


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    id: str
    answerable: bool
    ranked: tuple[str, ...]  # document ids, best first, each once
    top_score: float | None  # the best dense score among the hits
    latency_ms: float
    metrics: dict[str, float]
    no_answer: bool = False  # with its floor, the search would find nothing relevant
    rerank: str | None = None  # what the rerank step did (see SearchResponse.rerank)
    rerank_ms: float | None = None  # time the reranker took or was waited for


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: str
    answered_by: str  # the mode the search really ran (keyword when the embedder is down)
    metrics: dict[str, float | None]
    no_answer: dict[str, Any] | None
    citation_coverage: float | None
    hits: int
    latency_ms: dict[str, float | None]
    warnings: list[str] = field(default_factory=list)
    outcomes: list[QuestionOutcome] = field(default_factory=list)
    rerank: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class EvalResult:
    dataset: str
    kind: str
    source: str
    kb: str
    embedder: str | None
    created_at: float
    questions: int
    unanswerable: int
    documents: int
    config: dict[str, Any]
    modes: list[ModeResult]
    notes: list[str] = field(default_factory=list)
    index: dict[str, Any] | None = None
    schema: int = RESULT_SCHEMA

    def to_json(self, details: bool = False) -> dict[str, Any]:
        """Plain JSON values; per-question outcomes only with ``details``."""
        out = dataclasses.asdict(self)
        for mode in out["modes"]:
            if details:
                for outcome in mode["outcomes"]:
                    outcome["ranked"] = outcome["ranked"][:RANK_DEPTH]
            else:
                del mode["outcomes"]
        return out

    def mode(self, name: str) -> ModeResult:
        return next(m for m in self.modes if m.mode == name)


# -- running ---------------------------------------------------------------------------------


def run_task(
    lb: Lorebase,
    task: EvalTask,
    config: EvalConfig | None = None,
    on_question: Callable[[str, int, int], None] | None = None,
) -> EvalResult:
    """Ask every question in every mode and measure. ``on_question(mode, done, total)``."""
    config = config or EvalConfig()
    if not task.questions:
        raise InvalidInput("the question set is empty")
    texts = [query_text(q.text) for q in task.questions]
    notes = list(task.notes)
    cut = sum(1 for q, text in zip(task.questions, texts, strict=True) if text != q.text)
    if cut:
        notes.append(f"{cut} questions were cut to {MAX_QUERY_CHARS} characters")
    kb = lb.kb(task.kb)
    if config.no_answer_threshold is None:  # the floor the base's own model has in search
        answering = kb_embedders(kb).answering
        threshold = lb.embedders.threshold(answering, lb.settings.search.no_answer_threshold)
        config = dataclasses.replace(config, no_answer_threshold=threshold)
    modes = [_run_mode(lb, task, texts, mode, config, on_question) for mode in config.modes]
    return EvalResult(
        dataset=task.dataset,
        kind=task.kind,
        source=task.source,
        kb=task.kb,
        # The identity its vectors were made with (the base's own embedder's).
        embedder=kb.identity_key,
        created_at=time.time(),
        questions=len(task.questions),
        unanswerable=sum(1 for q in task.questions if not q.answerable),
        documents=kb.indexed,
        config={
            "modes": [m.value for m in config.modes],
            "ks": list(config.ks),
            "depth": config.depth,
            "no_answer_threshold": config.no_answer_threshold,
            "floor": config.floor,
            "fusion": config.fusion,
            "rerank": config.rerank,
        },
        modes=modes,
        notes=notes,
        index=_index_summary(task.index),
    )


def _run_mode(
    lb: Lorebase,
    task: EvalTask,
    texts: list[str],
    mode: Mode,
    config: EvalConfig,
    on_question: Callable[[str, int, int], None] | None,
) -> ModeResult:
    threshold = config.no_answer_threshold
    assert threshold is not None  # set by run_task

    def search(text: str) -> SearchResponse:
        return lb.search(
            text,
            kb=task.kb,
            top_k=config.depth,
            mode=mode,
            fusion=config.fusion,
            rerank=config.rerank,
            # Without the floor, it is judged below from the same hits.
            no_answer_threshold=threshold if config.floor else NO_FLOOR,
        )

    search(texts[0])  # untimed: it loads the model and the vector matrix
    outcomes: list[QuestionOutcome] = []
    answered_by: set[str] = set()
    warnings: dict[str, None] = {}
    covered: list[bool] = []
    for done, (question, text) in enumerate(zip(task.questions, texts, strict=True), start=1):
        started = time.perf_counter()
        response = search(text)
        latency = (time.perf_counter() - started) * 1000
        answered_by.add(response.mode.value)
        warnings.update(dict.fromkeys(w.split(":", 1)[0] for w in response.warnings))
        covered += [_cited(hit) for hit in response.hits]
        ranked = tuple(metrics.distinct(task.document_of(h.provenance.path) for h in response.hits))
        scores = question_metrics(ranked, question, config.ks) if question.answerable else {}
        outcomes.append(
            QuestionOutcome(
                question.id,
                question.answerable,
                ranked,
                _top_dense(response.hits),
                latency,
                scores,
                no_answer=_no_answer_found(response.hits, threshold),
                rerank=response.rerank,
                rerank_ms=response.timings_ms.get("rerank"),
            )
        )
        if on_question is not None:
            on_question(mode.value, done, len(task.questions))
    by = Mode.KEYWORD.value if answered_by == {Mode.KEYWORD.value} else mode.value
    # Keyword search has no floor (every keyword hit matches a query term): no gate to judge.
    gate = _no_answer(outcomes, threshold) if by != Mode.KEYWORD.value else None
    return ModeResult(
        mode=mode.value,
        answered_by=by,
        metrics=_averages(outcomes, config.ks),
        no_answer=gate,
        citation_coverage=metrics.mean(covered),
        hits=len(covered),
        latency_ms=metrics.latency_summary([o.latency_ms for o in outcomes]),
        warnings=list(warnings),
        outcomes=outcomes,
        rerank=rerank_summary(outcomes) if config.rerank else None,
    )


def metric_names(ks: Sequence[int]) -> list[str]:
    """The metric keys a result has, in display order."""
    return [
        *(f"recall@{k}" for k in ks),
        *(f"precision@{k}" for k in ks),
        f"mrr@{RANK_DEPTH}",
        f"ndcg@{RANK_DEPTH}",
    ]


def question_metrics(
    ranked: Sequence[str], question: Question, ks: Sequence[int]
) -> dict[str, float]:
    relevance = question.relevance
    out = {f"recall@{k}": metrics.recall_at_k(ranked, relevance, k) for k in ks}
    out |= {f"precision@{k}": metrics.precision_at_k(ranked, relevance, k) for k in ks}
    out[f"mrr@{RANK_DEPTH}"] = metrics.reciprocal_rank(ranked, relevance, RANK_DEPTH)
    out[f"ndcg@{RANK_DEPTH}"] = metrics.ndcg_at_k(ranked, relevance, RANK_DEPTH)
    return out


def query_text(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    """The question as a search takes it: at most ``limit`` characters, cut at a space."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut.rsplit(None, 1)[0] if " " in cut else cut


def _averages(outcomes: list[QuestionOutcome], ks: Sequence[int]) -> dict[str, float | None]:
    answerable = [o for o in outcomes if o.answerable]
    return {name: metrics.mean(o.metrics[name] for o in answerable) for name in metric_names(ks)}


def _no_answer(outcomes: list[QuestionOutcome], threshold: float) -> dict[str, Any]:
    """Accuracy of the search's own "nothing relevant found" (``no_answer``): over unanswerable
    questions (the headline), and over answerable ones (share not wrongly turned away)."""
    unanswerable = [o for o in outcomes if not o.answerable]
    answerable = [o for o in outcomes if o.answerable]

    def accuracy(items: list[QuestionOutcome]) -> float | None:
        return metrics.mean(float(o.no_answer != o.answerable) for o in items)

    return {
        "threshold": threshold,
        "unanswerable": len(unanswerable),
        "accuracy": accuracy(unanswerable),
        "answerable_kept": accuracy(answerable),
    }


def rerank_summary(outcomes: Sequence[QuestionOutcome]) -> dict[str, Any]:
    """How the rerank step went over the questions: how many were reranked, skipped by the
    gate, timed out or failed; the reranker's time spent, and what it would have been had every
    question been reranked (each skipped one at the mean time of the reranked ones)."""
    statuses = Counter(o.rerank for o in outcomes)
    spent = sum(o.rerank_ms or 0.0 for o in outcomes)
    mean = metrics.mean(
        o.rerank_ms for o in outcomes if o.rerank == "reranked" and o.rerank_ms is not None
    )
    skipped = statuses["rerank_skipped"]
    every = None if mean is None else spent + mean * skipped
    return {
        "questions": len(outcomes),
        "reranked": statuses["reranked"],
        "skipped": skipped,
        "timeout": statuses["rerank_timeout"],
        "failed": statuses["reranker_unavailable"] + statuses["reranker_refused"],
        "skip_rate": skipped / len(outcomes) if outcomes else None,
        "ms_spent": round(spent, 3),
        "ms_if_every_query_reranked": None if every is None else round(every, 3),
        "ms_saved": None if every is None else round(every - spent, 3),
    }


def _no_answer_found(hits: Sequence[Hit], threshold: float) -> bool:
    """What the search would have said (``no_answer``) with its floor at ``threshold``: no hit
    that the keyword arm found or that scores at least ``threshold`` dense. The hits of one
    search hold the best of each arm near the top, so the first hits decide it."""
    return not any(
        is_supported(
            "keyword" in hit.scores,
            hit.scores["dense"].score if "dense" in hit.scores else None,
            threshold,
        )
        for hit in hits
    )


def _top_dense(hits: Sequence[Hit]) -> float | None:
    dense = [hit.scores["dense"].score for hit in hits if "dense" in hit.scores]
    return max(dense) if dense else None


def _cited(hit: Hit) -> bool:
    where = hit.provenance
    return metrics.citation_complete(
        where.kind, where.path, trail=where.trail, page=where.page, line=where.line
    )


def _index_summary(report: IngestReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "seconds": round(report.seconds, 3),
        "files": report.files,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "failed": len(report.failed),
        "chunks": report.chunks,
        "embedded": report.embedded,
        "reused": report.reused,
    }
