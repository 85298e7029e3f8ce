"""The search flow: embed the query while BM25 runs, fuse, cut what no arm supports, rerank
if asked, hydrate, expand, cite.

Both arms are scoped to the same knowledge bases and return the same number of candidates.
Bases embedded with different models (see :mod:`lorebase.embed.registry`) are searched
together: the query is embedded once per embedding identity, each identity's bases give a
dense ranking held to that model's own relevance floor, and the rankings are merged into one
dense arm (:func:`~lorebase.search.floor.merge_dense`). When an embedder cannot answer, the
bases it serves are searched by keyword only and the response's warnings name it; the search
never fails for that. Likewise the reranker (see :mod:`lorebase.search.reranking`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np

from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.embed.registry import Embedders, kb_embedders, shown_name
from lorebase.errors import LorebaseError, NotFound, Unavailable
from lorebase.rerank.base import Reranker
from lorebase.search.floor import Threshold, fuse_supported, merge_dense, supported
from lorebase.search.fusion import FUSIONS, Scored
from lorebase.search.gate import rerank_depth
from lorebase.search.query import (
    Hit,
    Mode,
    Neighbor,
    RerankStatus,
    SearchRequest,
    SearchResponse,
    StepScore,
)
from lorebase.search.reranking import NOT_CONFIGURED, UNAVAILABLE, rerank_hits
from lorebase.search.snippets import snippet
from lorebase.settings import SearchSettings
from lorebase.store.base import Catalogue, Chunks, KnowledgeBase, LexicalIndex, StoredChunk, Vectors

# Each arm returns this many candidates, or 3 x top_k when that is more.
CANDIDATES = 50
CANDIDATES_PER_RESULT = 3
# Documents repeat passages (boilerplate, copied sections); a result list shows each once.
DUPLICATE_SLACK = 10
# Keyword arms that may run at once (each reads on its own connection): concurrent searches
# of a server overlap instead of queueing behind one thread.
KEYWORD_THREADS = 4
# Reranker calls that may run at once; a search waits for its own at most the deadline.
RERANK_THREADS = 4
# Model servers embedding a query at once (a search waits for its own at most the deadline).
EMBED_THREADS = 4

T = TypeVar("T")


class SearchableStore(Catalogue, LexicalIndex, Vectors, Chunks, Protocol):
    """The roles a search reads: the bases, both arms, and the chunks they hydrate."""


@dataclass(slots=True)
class _Dense:
    """The dense arm of one search: the merged ranking, the threshold its candidates are held
    to, the identity each base's ranking came from, and the bases searched by keyword only
    (their embedder did not answer)."""

    ranking: Scored | None = None
    threshold: Threshold = 0.0
    identities: dict[int, str] = field(default_factory=dict)
    keyword_only: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Model:
    """One embedding identity a search embedded the query with, and the bases it answers
    for."""

    identity: EmbedderIdentity
    vector: np.ndarray
    threshold: float
    kbs: list[KnowledgeBase] = field(default_factory=list)


class SearchService:
    def __init__(
        self,
        store: SearchableStore,
        embedders: Embedders | Embedder | None,
        reranker: Reranker | None = None,
        settings: SearchSettings | None = None,
    ) -> None:
        """``embedders``: the named embedders (each base's own), or one embedder for every
        base (None: keyword only)."""
        self.store = store
        self.embedders = (
            embedders
            if isinstance(embedders, Embedders)
            else Embedders((), Path(), default=embedders)
        )
        self.reranker = reranker
        self.settings = settings or SearchSettings()
        self._pool = ThreadPoolExecutor(
            max_workers=KEYWORD_THREADS, thread_name_prefix="lorebase-keyword"
        )
        self._rerank_pool = ThreadPoolExecutor(
            max_workers=RERANK_THREADS, thread_name_prefix="lorebase-rerank"
        )
        self._embed_pool = ThreadPoolExecutor(
            max_workers=EMBED_THREADS, thread_name_prefix="lorebase-embed"
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        # A reranker call past its deadline is not waited for (its answer would be dropped).
        self._rerank_pool.shutdown(wait=False, cancel_futures=True)
        self._embed_pool.shutdown(wait=False, cancel_futures=True)

    def search(self, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        warnings: list[str] = []
        notes: list[str] = []
        kbs = self._knowledge_bases(request)
        kb_ids = [kb.id for kb in kbs]
        limit = max(CANDIDATES, CANDIDATES_PER_RESULT * request.top_k)
        documents = self._documents(request, kb_ids)

        keyword: Future[Scored] | None = None
        if request.mode in (Mode.HYBRID, Mode.KEYWORD):
            keyword = self._pool.submit(
                _timed,
                timings,
                "keyword",
                lambda: self.store.keyword_search(kb_ids, request.query, limit, documents),
            )
        dense = _Dense()
        if request.mode in (Mode.HYBRID, Mode.DENSE):
            dense = self._dense(request, kbs, limit, documents, timings, warnings)
            notes += _reembedding(kbs, set(dense.keyword_only))
            if keyword is None and (dense.ranking is None or dense.keyword_only):
                # Dense only, and some bases' (or every base's) embedder could not answer:
                # those bases answer by keyword.
                by_keyword = kb_ids if dense.ranking is None else dense.keyword_only
                keyword = self._pool.submit(
                    _timed,
                    timings,
                    "keyword",
                    lambda: self.store.keyword_search(by_keyword, request.query, limit, documents),
                )
        arms: dict[str, Scored] = {}
        if keyword is not None:
            arms["keyword"] = keyword.result()
        if dense.ranking is not None:
            arms["dense"] = dense.ranking

        fuse_started = time.perf_counter()
        floor = request.no_answer_threshold
        threshold = dense.threshold if floor is None else floor
        if len(arms) > 1:
            fused = fuse_supported(FUSIONS[request.fusion], arms, threshold)
        else:
            fused = next(iter(arms.values()), [])
        fused = supported(fused, arms, threshold)
        # Some extra candidates so that collapsing repeated passages still fills top_k.
        depth = request.top_k + DUPLICATE_SLACK
        reranker = self.reranker if request.rerank else None
        rerank_status: RerankStatus | None = None
        if request.rerank and reranker is None:
            rerank_status = UNAVAILABLE
            warnings.append(NOT_CONFIGURED)
        reread = rerank_depth(request.top_k)
        top = fused[: max(depth, reread) if reranker is not None else depth]
        timings["fuse"] = _ms(fuse_started)

        hydrate_started = time.perf_counter()
        hits = _without_repeats(self._candidates(kb_ids, top, arms))
        hydrate_ms = _ms(hydrate_started)
        if reranker is not None:
            outcome = rerank_hits(
                reranker,
                self._rerank_pool,
                self.settings.rerank_deadline,
                request.query,
                hits,
                reread,
                arms,
            )
            hits, rerank_status = outcome.hits, outcome.status
            if outcome.ms is not None:
                timings["rerank"] = outcome.ms
            if outcome.message is not None:
                (warnings if outcome.warning else notes).append(outcome.message)
        finish_started = time.perf_counter()
        hits = self._finished(kb_ids, request, hits)
        timings["hydrate"] = round(hydrate_ms + _ms(finish_started), 3)
        timings["total"] = _ms(started)
        mode = request.mode if "dense" in arms or request.mode is Mode.KEYWORD else Mode.KEYWORD
        return SearchResponse(
            hits=hits,
            mode=mode,
            timings_ms=timings,
            warnings=warnings,
            notes=notes,
            rerank=rerank_status,
            identities=dense.identities,
        )

    # -- steps -------------------------------------------------------------------------------
    def _knowledge_bases(self, request: SearchRequest) -> list[KnowledgeBase]:
        if request.kb_ids:
            ids = dict.fromkeys(request.kb_ids)
            return [self.store.get_kb_by_id(kb_id, totals=False) for kb_id in ids]
        names = request.knowledge_bases
        if not names:
            kbs = self.store.list_kbs(totals=False)
            if not kbs:
                raise NotFound("there are no knowledge bases yet; add files with `lorebase add`")
            return kbs
        return [self.store.get_kb(name, totals=False) for name in dict.fromkeys(names)]

    def _documents(self, request: SearchRequest, kb_ids: list[int]) -> list[str] | None:
        """The documents both arms are restricted to (None: all): ``document_ids``, and the
        documents the path and language filters match (resolved here, before ranking)."""
        documents = list(request.document_ids) if request.document_ids is not None else None
        if request.path_prefix is None and request.language is None:
            return documents
        matching = self.store.matching_documents(
            kb_ids, path_prefix=request.path_prefix, language=request.language
        )
        if documents is None:
            return matching
        allowed = set(matching)
        return [document for document in documents if document in allowed]

    def _dense(
        self,
        request: SearchRequest,
        kbs: list[KnowledgeBase],
        limit: int,
        documents: list[str] | None,
        timings: dict[str, float],
        warnings: list[str],
    ) -> _Dense:
        """The dense arm over ``kbs``: each identity's bases searched with its query vector,
        the rankings merged (one identity: its ranking as it is). A base whose embedder does
        not answer, or that was indexed with another model than the one it names, answers by
        keyword only (``keyword_only``), with a warning."""
        out = _Dense(threshold=self.settings.no_answer_threshold)
        models = self._models(request.query, kbs, out, timings, warnings)
        stale = [
            kb
            for key, model in models.items()
            for kb in model.kbs
            if kb.identity_key not in (None, key)
        ]
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
        out.keyword_only += [kb.id for kb in stale]
        searched = {
            key: [kb.id for kb in model.kbs if kb.identity_key == key]
            for key, model in models.items()
        }
        searched = {key: ids for key, ids in searched.items() if ids}
        if not searched:
            # Nothing embedded yet: an empty dense arm, unless no base answers by vector.
            out.ranking = [] if models and not stale else None
            return out
        waiting = self.store.count_keyword_only([i for ids in searched.values() for i in ids])
        if waiting:
            are = "document is" if waiting == 1 else "documents are"
            warnings.append(
                f"still_embedding: {waiting} {are} searchable by keyword only until their "
                "vectors are written"
            )
        started = time.perf_counter()
        rankings = []
        for key, ids in searched.items():
            model = models[key]
            found = self.store.dense_search(ids, model.identity, model.vector, limit, documents)
            rankings.append((found, model.threshold))
            out.identities.update(dict.fromkeys(ids, key))
        timings["dense"] = _ms(started)
        if len(rankings) == 1:
            out.ranking, out.threshold = rankings[0]
        else:
            out.ranking, out.threshold = merge_dense(rankings)
        return out

    def _models(
        self,
        query: str,
        kbs: list[KnowledgeBase],
        out: _Dense,
        timings: dict[str, float],
        warnings: list[str],
    ) -> dict[str, _Model]:
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
                identity = embedder.identity
            except LorebaseError as error:
                self._down(name, members, error, out, warnings)
                continue
            named[name] = identity
            embedders.setdefault(identity.key, (name, embedder))
        vectors = self._query_vectors(query, embedders)
        models: dict[str, _Model] = {}
        for name, identity in named.items():
            members = by_name[name]
            found = vectors.get(identity.key)
            if isinstance(found, LorebaseError):
                self._down(name, members, found, out, warnings)
                continue
            assert found is not None
            model = models.get(identity.key)
            if model is None:
                first = embedders[identity.key][0]
                threshold = self.embedders.threshold(first, self.settings.no_answer_threshold)
                model = models[identity.key] = _Model(identity, found, threshold)
            model.kbs += members
        timings["embed"] = _ms(started)
        return models

    def _answering(
        self, name: str | None, members: list[KnowledgeBase], warnings: list[str]
    ) -> Embedder | None:
        """The embedder ``name`` (None with a warning: not configured, none at all, or it
        failed a moment ago and is not waited on again yet)."""
        bases = ", ".join(kb.name for kb in members)
        try:
            embedder = self.embedders.for_queries(name)
        except NotFound:
            warnings.append(
                f"embedder_unavailable: the embedder {name!r} is not configured any more; "
                f"answered by keyword only: {bases} (`lorebase embedders` lists them)"
            )
            return None
        if embedder is None:
            warnings.append("embedder_unavailable: no embedder is configured; answered by keyword")
            return None
        if self.embedders.known_down(name) is not None:
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
        out: _Dense,
        warnings: list[str],
    ) -> None:
        """An embedder that failed this search: its bases by keyword; one that could not
        answer (down, too slow) is remembered a moment, one that refused this query is not."""
        if isinstance(error, Unavailable):
            self.embedders.mark_unreachable(name, str(error))
        warnings.append(
            f"embedder_unavailable: the embedder {shown_name(name)} did not answer; "
            f"answered by keyword only: {', '.join(kb.name for kb in members)}"
        )
        out.keyword_only += [kb.id for kb in members]

    def _query_vectors(
        self, query: str, embedders: dict[str, tuple[str | None, Embedder]]
    ) -> dict[str, np.ndarray | LorebaseError]:
        """The query's vector per identity key, or why there is none (content-free)."""
        remote = {
            key: self._embed_pool.submit(embedder.embed_query, query)
            for key, (_, embedder) in embedders.items()
            if embedder.remote
        }
        found: dict[str, np.ndarray | LorebaseError] = {}
        for key, (_, embedder) in embedders.items():
            if key in remote:
                continue
            try:
                found[key] = np.asarray(embedder.embed_query(query))
            except LorebaseError as error:
                found[key] = error
        deadline = time.monotonic() + self.settings.embed_deadline
        for key, future in remote.items():
            try:
                found[key] = np.asarray(future.result(max(0.0, deadline - time.monotonic())))
            except FutureTimeout:
                future.cancel()
                found[key] = Unavailable(
                    f"no answer within the embed deadline ({self.settings.embed_deadline:g} s, "
                    "LOREBASE_EMBED_DEADLINE)"
                )
            except LorebaseError as error:
                found[key] = error
        return found

    def _candidates(self, kb_ids: list[int], top: Scored, arms: dict[str, Scored]) -> list[Hit]:
        """The fused candidates as hits (no snippets yet), with their step scores."""
        ranks = {
            name: {item: (rank, score) for rank, (item, score) in enumerate(ranking, start=1)}
            for name, ranking in arms.items()
        }
        fused_ranks = {item: (rank, score) for rank, (item, score) in enumerate(top, start=1)}
        chunks = self.store.get_chunks(kb_ids, [item for item, _ in top])
        hits = []
        for chunk in chunks:
            scores = {
                name: StepScore(score=ranked[chunk.id][1], rank=ranked[chunk.id][0])
                for name, ranked in ranks.items()
                if chunk.id in ranked
            }
            if len(arms) > 1:
                rank, score = fused_ranks[chunk.id]
                scores["fused"] = StepScore(score=score, rank=rank)
            hits.append(_hit(chunk, scores))
        return hits

    def _finished(self, kb_ids: list[int], request: SearchRequest, hits: list[Hit]) -> list[Hit]:
        """Cut to top_k; snippets (only for what is returned) and neighbours."""
        hits = [
            replace(hit, snippet=snippet(hit.text, request.query)) for hit in hits[: request.top_k]
        ]
        if request.neighbors:
            hits = [self._with_neighbors(kb_ids, hit, request.neighbors) for hit in hits]
        return hits

    def _with_neighbors(self, kb_ids: list[int], hit: Hit, window: int) -> Hit:
        around = self.store.neighbors(kb_ids, hit.chunk_id, window)
        ordinal = next(c.ordinal for c in around if c.id == hit.chunk_id)
        as_neighbor = [Neighbor(c.id, c.ordinal, c.text) for c in around]
        before = tuple(n for n in as_neighbor if n.ordinal < ordinal)
        after = tuple(n for n in as_neighbor if n.ordinal > ordinal)
        return replace(hit, before=before, after=after)


def _reembedding(kbs: list[KnowledgeBase], keyword_only: set[int]) -> list[str]:
    """A note per base being re-embedded: it answers from its current vectors until then (or
    by keyword, when its embedder's configuration changed: a warning says so)."""
    return [
        f"reembedding: {kb.name} answers by vector with its current embedder's vectors until "
        f"the re-embed to {kb.embedder_next} is done (documents indexed since are found by "
        "keyword until then)"
        for kb in kbs
        if kb.embedder_next is not None and kb.id not in keyword_only
    ]


def _without_repeats(hits: list[Hit]) -> list[Hit]:
    """Hits whose passage (trail and text) was already shown higher up are left out."""
    seen: set[tuple[tuple[str, ...], str]] = set()
    kept = []
    for hit in hits:
        key = (hit.provenance.trail, " ".join(hit.text.split()))
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept


def _hit(chunk: StoredChunk, scores: dict[str, StepScore]) -> Hit:
    return Hit(
        chunk_id=chunk.id, provenance=chunk.provenance, text=chunk.text, snippet="", scores=scores
    )


def _timed(timings: dict[str, float], step: str, work: Callable[[], T]) -> T:
    started = time.perf_counter()
    try:
        return work()
    finally:
        timings[step] = _ms(started)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
