"""The dense arm of a search: the query embedded once per embedding identity, each identity's
bases searched with its vector and held to its model's relevance floor, the rankings merged
(:func:`~lorebase.search.floor.merge_dense`), and the evidence fusion needs.

Bases embedded with different models (see :mod:`lorebase.embed.registry`) are searched
together. When an embedder cannot answer, the bases it serves are searched by keyword only and
the search's warnings name it; the search never fails for that.

**Evidence for fusion.** Every keyword candidate gets its cosine too (read from the stored
vectors of its base's model, :meth:`~lorebase.store.base.Vectors.dense_scores`), and each
model's cosines become evidence scaled by its best one and weighed by whether the model reads
the question's language (:mod:`lorebase.languages`; see :mod:`lorebase.search.fusion`). A
model that cannot read it says so in a note.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from lorebase.chunk.tokens import estimate_tokens
from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.embed.registry import Embedders, kb_embedders, shown_name
from lorebase.errors import LorebaseError, NotFound, Unavailable
from lorebase.languages import Detected, LanguageDetector, readable
from lorebase.search.floor import Threshold, merge_dense
from lorebase.search.fusion import UNREAD_WEIGHT, Scored, dense_evidence
from lorebase.search.query import elapsed_ms
from lorebase.search.query_cache import QueryVectors
from lorebase.search.turns import Turns
from lorebase.settings import SearchSettings
from lorebase.store.base import KnowledgeBase, Vectors
from lorebase.store.states import Scope
from lorebase.usage import Role, UsageMeter


class DenseStore(Vectors, Protocol):
    """What the dense arm reads: vectors, and how many documents still wait for theirs."""


@dataclass(slots=True)
class Model:
    """One embedding identity a search embedded the query with, the bases it answers for, its
    relevance floor, and what its cosines weigh (1, or :data:`UNREAD_WEIGHT` when it cannot
    read the question)."""

    name: str | None
    identity: EmbedderIdentity
    vector: np.ndarray
    threshold: float
    languages: frozenset[str] | None
    reading: float = 1.0
    kbs: list[KnowledgeBase] = field(default_factory=list)
    searched: list[int] = field(default_factory=list)  # its bases holding its vectors
    cosines: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class DenseResult:
    """The dense arm of one search: the merged ranking (None: no base answers by vector), the
    threshold its candidates are held to, the identity each base's ranking came from, the bases
    searched by keyword only (their embedder did not answer), the models searched, and the
    notes on models that cannot read the question."""

    ranking: Scored | None = None
    threshold: Threshold = 0.0
    identities: dict[int, str] = field(default_factory=dict)
    keyword_only: list[int] = field(default_factory=list)
    models: list[Model] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    language: Detected | None = None  # the question's, when some model reads only some
    detecting: Future[Detected] | None = None  # ``language``, told while the query embeds

    @property
    def cosines(self) -> dict[str, float]:
        """Every candidate's cosine under its own model: the ranking's and the keyword
        candidates' filled in by :meth:`DenseArm.complete`."""
        return {item: score for model in self.models for item, score in model.cosines.items()}

    @property
    def reads_question(self) -> bool:
        """Whether some model searched reads the question's language (or none was searched)."""
        return not self.models or any(model.reading == 1.0 for model in self.models)

    @property
    def evidence(self) -> dict[str, float]:
        """Every candidate's dense evidence for fusion (see :mod:`lorebase.search.fusion`)."""
        out: dict[str, float] = {}
        for model in self.models:
            out.update(dense_evidence(model.cosines, model.reading))
        return out


class DenseArm:
    """Embeds a query and searches the bases' vectors (see the module docstring)."""

    def __init__(
        self,
        store: DenseStore,
        embedders: Embedders,
        settings: SearchSettings,
        pool: Executor,
        languages: LanguageDetector | None = None,
        *,
        usage: UsageMeter | None = None,
        turns: Turns | None = None,
    ) -> None:
        """``pool``: where model servers embed the query at once; ``languages``: the detector
        of the question's language (built here when not given; its model loads on first use,
        when a model that reads only some languages is searched); ``turns``: the search's
        turn, given up while model servers embed."""
        self.store = store
        self.embedders = embedders
        self.settings = settings
        self._pool = pool
        self._turns = Turns() if turns is None else turns
        self.languages = languages or LanguageDetector()
        self.asked = QueryVectors()
        self.usage = usage

    def search(
        self,
        query: str,
        kbs: list[KnowledgeBase],
        limit: int,
        documents: Sequence[str] | None,
        timings: dict[str, float],
        warnings: list[str],
    ) -> DenseResult:
        """The dense arm over ``kbs``: each identity's bases searched with its query vector,
        the rankings merged (one identity: its ranking as it is). A base whose embedder does
        not answer, or that was indexed with another model than the one it names, answers by
        keyword only (``keyword_only``), with a warning."""
        out = DenseResult(threshold=self.settings.no_answer_threshold)
        models = self._models(query, kbs, out, timings, warnings)
        stale = [
            kb
            for key, model in models.items()
            for kb in model.kbs
            if kb.identity_key not in (None, key)
        ]
        _warn_stale(stale, warnings)
        out.keyword_only += [kb.id for kb in stale]
        for key, model in models.items():
            model.searched = [kb.id for kb in model.kbs if kb.identity_key == key]
        searched = [model for model in models.values() if model.searched]
        if not searched:
            # Nothing embedded yet: an empty dense arm, unless no base answers by vector.
            out.ranking = [] if models and not stale else None
            return out
        waiting = self.store.count_keyword_only([i for m in searched for i in m.searched])
        if waiting:
            are = "document is" if waiting == 1 else "documents are"
            warnings.append(
                f"still_embedding: {waiting} {are} searchable by keyword only until their "
                "vectors are written"
            )
        started = time.perf_counter()
        rankings = []
        for model in searched:
            found = self.store.dense_search(
                model.searched, model.identity, model.vector, limit, documents
            )
            model.cosines = dict(found)
            rankings.append((found, model.threshold))
            out.identities.update(dict.fromkeys(model.searched, model.identity.key))
        out.models = searched
        self._read_language(query, out)
        timings["dense"] = elapsed_ms(started)
        if len(rankings) == 1:
            out.ranking, out.threshold = rankings[0]
        else:
            out.ranking, out.threshold = merge_dense(rankings)
        return out

    def complete(self, result: DenseResult, candidates: Scored, timings: dict[str, float]) -> None:
        """Fill in the cosine of every candidate (the keyword arm's) the dense arm did not
        return, each from its own base's model."""
        started = time.perf_counter()
        for model in result.models:
            missing = [item for item, _ in candidates if item not in model.cosines]
            if missing:
                model.cosines.update(
                    self.store.dense_scores(model.searched, model.identity, model.vector, missing)
                )
        timings["dense"] = round(timings.get("dense", 0.0) + elapsed_ms(started), 3)

    def _read_language(self, query: str, result: DenseResult) -> None:
        """Whether each model reads the question (detected once, only when some model reads
        only some languages); a note names each that does not."""
        declared = [model for model in result.models if model.languages is not None]
        if not declared:
            return
        detecting = result.detecting
        detected = detecting.result() if detecting is not None else self.languages.detect(query)
        result.language = detected
        for model in declared:
            if readable(detected, model.languages):
                continue
            model.reading = UNREAD_WEIGHT
            result.unread.append(_unread_note(detected, model))

    def _models(
        self,
        query: str,
        kbs: list[KnowledgeBase],
        out: DenseResult,
        timings: dict[str, float],
        warnings: list[str],
    ) -> dict[str, Model]:
        """The query embedded once per embedding identity of the embedders ``kbs`` answer
        with, by identity key: a local model here, model servers at once on their own threads,
        each waited for at most the embed deadline. The bases of an embedder that is not
        there, does not answer (or did not a moment ago) or is too slow go to
        ``out.keyword_only``, each embedder named in a warning."""
        by_name: dict[str | None, list[KnowledgeBase]] = {}
        for kb in kbs:
            by_name.setdefault(kb_embedders(kb).answering, []).append(kb)
        started = time.perf_counter()
        # Which embedder and identity each name is, and who embeds each identity.
        named: dict[str | None, EmbedderIdentity] = {}
        embedders: dict[str, tuple[str | None, Embedder]] = {}
        for name, members in by_name.items():
            try:
                embedder = self._answering(name, members, warnings)
                if embedder is None:
                    out.keyword_only += [kb.id for kb in members]
                    continue
                if (
                    embedder.languages is not None
                    and out.detecting is None
                    and self._turns.room_beside()
                ):
                    # Told on another thread while this one loads the model (the first
                    # search: ~0.1 s, the detector's own load beside it) and runs it (which
                    # lets go of the interpreter): ~0.2 ms a search no longer after it.
                    # With the cores busy with searches it is told after, on this thread
                    # (lorebase.search.turns).
                    out.detecting = self._pool.submit(self.languages.detect, query)
                identity = embedder.identity
            except LorebaseError as error:
                self._down(name, members, error, out, warnings)
                continue
            named[name] = identity
            embedders.setdefault(identity.key, (name, embedder))
        spent: dict[str, float] = {}
        vectors = self._query_vectors(query, embedders, spent)
        self._count(query, embedders, spent, by_name, named)
        models: dict[str, Model] = {}
        for name, identity in named.items():
            members = by_name[name]
            found = vectors.get(identity.key)
            if isinstance(found, LorebaseError):
                # A client with an owner's own key failing says nothing of the server's key.
                shared = not self.embedders.owned(embedders[identity.key][1])
                self._down(name, members, found, out, warnings, remember=shared)
                continue
            assert found is not None
            model = models.get(identity.key)
            if model is None:
                first, embedder = embedders[identity.key]
                threshold = self.embedders.threshold(first, self.settings.no_answer_threshold)
                model = models[identity.key] = Model(
                    first, identity, found, threshold, embedder.languages
                )
            model.kbs += members
        timings["embed"] = elapsed_ms(started)
        return models

    def _answering(
        self, name: str | None, members: list[KnowledgeBase], warnings: list[str]
    ) -> Embedder | None:
        """The embedder ``name`` (None with a warning: not configured, none at all, or it
        failed a moment ago and is not waited on again yet)."""
        bases = ", ".join(kb.name for kb in members)
        # Personal bases of one owner alone: embedded with the owner's own key, if any.
        own = members[0] if all(_same_owner(kb, members[0]) for kb in members) else None
        try:
            embedder = self.embedders.for_base(name, own, queries=True)
        except NotFound:
            warnings.append(
                f"embedder_unavailable: the embedder {name!r} is not configured any more; "
                f"answered by keyword only: {bases} (`lorebase embedders` lists them)"
            )
            return None
        if embedder is None:
            warnings.append("embedder_unavailable: no embedder is configured; answered by keyword")
            return None
        if self.embedders.known_down(name) is not None and not self.embedders.owned(embedder):
            warnings.append(
                f"embedder_unavailable: the embedder {shown_name(name)} did not "
                f"answer a moment ago; answered by keyword only: {bases}"
            )
            return None
        return embedder

    def _down(
        self,
        name: str | None,
        members: list[KnowledgeBase],
        error: LorebaseError,
        out: DenseResult,
        warnings: list[str],
        *,
        remember: bool = True,
    ) -> None:
        """An embedder that failed this search: its bases by keyword; one that could not
        answer (down, too slow) is remembered a moment (unless ``remember`` is False: a
        client with a base owner's own key), one that refused this query is not."""
        if remember and isinstance(error, Unavailable):
            self.embedders.mark_unreachable(name, str(error))
        warnings.append(
            f"embedder_unavailable: the embedder {shown_name(name)} did not answer; "
            f"answered by keyword only: {', '.join(kb.name for kb in members)}"
        )
        out.keyword_only += [kb.id for kb in members]

    def _count(
        self,
        query: str,
        embedders: dict[str, tuple[str | None, Embedder]],
        spent: dict[str, float],
        by_name: dict[str | None, list[KnowledgeBase]],
        named: dict[str | None, EmbedderIdentity],
    ) -> None:
        """Count each query embedded now (one asked before is not), in memory only: under the
        base it served, or none when it served several."""
        if self.usage is None or not spent:
            return
        tokens = estimate_tokens(query)
        for key, seconds in spent.items():
            name = embedders[key][0]
            members = [
                kb for n, identity in named.items() if identity.key == key for kb in by_name[n]
            ]
            kb_id = members[0].id if len(members) == 1 else None
            self.usage.record(
                kb_id, shown_name(name), Role.EMBEDDING, texts=1, tokens=tokens, seconds=seconds
            )

    def _query_vectors(
        self,
        query: str,
        embedders: dict[str, tuple[str | None, Embedder]],
        spent: dict[str, float] | None = None,
    ) -> dict[str, np.ndarray | LorebaseError]:
        """The query's vector per identity key (asked before: remembered), or why there is
        none (content-free); ``spent``: the seconds each identity embedded now took (an answer
        is counted, a failure is not)."""
        spent = {} if spent is None else spent
        found: dict[str, np.ndarray | LorebaseError] = {}
        for key in embedders:
            if (known := self.asked.get(key, query)) is not None:
                found[key] = known
        remembered = set(found)
        remote = {
            key: self._pool.submit(embedder.embed_query, query)
            for key, (_, embedder) in embedders.items()
            if embedder.remote and key not in found
        }
        for key, (_, embedder) in embedders.items():
            if key in remote or key in found:
                continue
            began = time.perf_counter()
            try:
                found[key] = np.asarray(embedder.embed_query(query))
                spent[key] = time.perf_counter() - began
            except LorebaseError as error:
                found[key] = error
        if remote:
            with self._turns.aside():  # model servers are other machines
                self._wait_for(remote, found, spent)
        for key, vector in found.items():
            if isinstance(vector, np.ndarray) and key not in remembered:
                self.asked.put(key, query, vector)
        return found

    def _wait_for(
        self,
        remote: dict[str, Future[np.ndarray]],
        found: dict[str, np.ndarray | LorebaseError],
        spent: dict[str, float],
    ) -> None:
        """The model servers' vectors, each waited for until the embed deadline (together)."""
        deadline = time.monotonic() + self.settings.embed_deadline
        began = time.perf_counter()
        for key, future in remote.items():
            try:
                found[key] = np.asarray(future.result(max(0.0, deadline - time.monotonic())))
                spent[key] = time.perf_counter() - began  # at most: the servers run at once
            except FutureTimeout:
                future.cancel()
                found[key] = Unavailable(
                    f"no answer within the embed deadline ({self.settings.embed_deadline:g} s, "
                    "LOREBASE_EMBED_DEADLINE)"
                )
            except LorebaseError as error:
                found[key] = error


def _warn_stale(stale: list[KnowledgeBase], warnings: list[str]) -> None:
    moving = [kb.name for kb in stale if kb.embedder_next is not None]
    if moving:  # re-embedded after its model's configuration changed: no old model to ask
        warnings.append(
            "embedding_identity_mismatch: knowledge bases whose embedder now makes other "
            f"vectors answered by keyword only until their re-embed is done: "
            f"{', '.join(moving)}"
        )
    fixed = [kb.name for kb in stale if kb.embedder_next is None]
    if fixed:
        warnings.append(
            "embedding_identity_mismatch: knowledge bases indexed with another model "
            f"answered by keyword only: {', '.join(fixed)}; re-embed them (`lorebase kb "
            "update NAME --embedder EMBEDDER --reembed`) or run `lorebase add` again"
        )


def _unread_note(detected: Detected, model: Model) -> str:
    """Content-free: a language code and the model's name, never the question."""
    reads = ", ".join(sorted(model.languages or ()))
    return (
        f"language_unread: the question reads as {detected.language}, which the embedder "
        f"{shown_name(model.name)} does not read ({reads}): its meaning weighs little in this "
        "search and keyword matches decide; a multilingual embedder would read it "
        "(`lorebase embedders`)"
    )


def _same_owner(kb: KnowledgeBase, first: KnowledgeBase) -> bool:
    """Whether ``kb`` is a personal base of ``first``'s owner. Pure."""
    return kb.scope is Scope.PERSONAL and kb.owner is not None and kb.owner == first.owner
