"""The search flow: embed the query while BM25 runs, fill in the missing scores, fuse, cut what
no arm supports, rerank if asked, collapse by document, hydrate, expand, cite.

Both arms are scoped to the same knowledge bases and return the same number of candidates.
The dense arm (:mod:`lorebase.search.dense_arm`) embeds the query once per embedding model and
gives every candidate of either arm its cosine; fusion (:mod:`lorebase.search.fusion`) combines
both arms' scores; the relevance floor (:mod:`lorebase.search.floor`) cuts what neither
supports; a document counts once, by its best passage (:mod:`lorebase.search.collapse`). When
an embedder cannot answer, the bases it serves are searched by keyword only and the response's
warnings name it; the search never fails for that. Likewise the reranker (see
:mod:`lorebase.search.reranking`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from lorebase.embed.base import Embedder
from lorebase.embed.registry import Embedders
from lorebase.errors import InvalidInput, NotFound
from lorebase.fields import unknown_field_message, unknown_fields
from lorebase.languages import LanguageDetector
from lorebase.rerank.base import Reranker
from lorebase.search.bounds import Mode
from lorebase.search.collapse import PASSAGES_PER_HIT, by_document, first_hits, without_repeats
from lorebase.search.dense_arm import DenseArm, DenseResult
from lorebase.search.floor import supported
from lorebase.search.fusion import FUSIONS, Arms, Scored
from lorebase.search.gate import rerank_depth
from lorebase.search.hydrate import Hydrated, Steps, explained
from lorebase.search.known_documents import KnownDocuments
from lorebase.search.query import (
    Hit,
    Neighbor,
    RerankStatus,
    SearchRequest,
    SearchResponse,
    elapsed_ms,
)
from lorebase.search.reranking import NOT_CONFIGURED, UNAVAILABLE, rerank_hits
from lorebase.search.snippets import KnownPassages, KnownTerms, snippets_for
from lorebase.search.turns import SEARCHES_AT_ONCE, Turns
from lorebase.settings import SearchSettings
from lorebase.store.base import Catalogue, Chunks, Fields, KnowledgeBase, LexicalIndex, Vectors
from lorebase.usage import UsageMeter

# Each arm returns this many candidates, or 3 x top_k when that is more (the eval's baselines
# read each arm at this depth: the same lists the fusion saw).
CANDIDATES = 100
CANDIDATES_PER_RESULT = 3
# Documents repeat passages (boilerplate, copied files); a result list shows each once.
DUPLICATE_SLACK = 10
# Keyword arms that may run at once (each reads on its own connection): concurrent searches
# of a server overlap instead of queueing behind one thread.
KEYWORD_THREADS = 4
# Reranker calls that may run at once; a search waits for its own at most the deadline.
RERANK_THREADS = 4
# Model servers embedding a query at once (a search waits for its own at most the deadline).
EMBED_THREADS = 4

T = TypeVar("T")


class SearchableStore(Catalogue, LexicalIndex, Vectors, Chunks, Fields, Protocol):
    """The roles a search reads: the bases, both arms, the chunks they hydrate and the
    documents' fields."""


@dataclass(frozen=True, slots=True)
class _Keyword:
    """The keyword arm of one search: its ranking and the query's ceiling (the most a chunk
    could score, what keyword support is judged against)."""

    ranking: Scored
    ceiling: float
    damaged: dict[int, str]  # bases whose keyword index is being rebuilt


class SearchService:
    def __init__(
        self,
        store: SearchableStore,
        embedders: Embedders | Embedder | None,
        reranker: Reranker | None = None,
        settings: SearchSettings | None = None,
        languages: LanguageDetector | None = None,
        usage: UsageMeter | None = None,
        at_once: int | None = SEARCHES_AT_ONCE,
        cores_shared: bool = False,
    ) -> None:
        """``embedders``: the named embedders (each base's own), or one embedder for every
        base (None: keyword only). ``languages``: the question's language detector (one is
        made when not given). ``usage``: where each query embedded is counted (in memory).
        ``at_once``: the searches that run at once (None: all); ``cores_shared``: whether as
        many processes answer searches as the machine has cores (both: see
        :mod:`lorebase.search.turns`)."""
        self.store = store
        self.embedders = (
            embedders
            if isinstance(embedders, Embedders)
            else Embedders((), Path(), default=embedders)
        )
        self.reranker = reranker
        self.settings = settings or SearchSettings()
        self._known_terms = KnownTerms()
        self._known_passages = KnownPassages()
        self._known_documents = KnownDocuments()
        self._pool = ThreadPoolExecutor(
            max_workers=KEYWORD_THREADS, thread_name_prefix="lorebase-keyword"
        )
        self._rerank_pool = ThreadPoolExecutor(
            max_workers=RERANK_THREADS, thread_name_prefix="lorebase-rerank"
        )
        self._embed_pool = ThreadPoolExecutor(
            max_workers=EMBED_THREADS, thread_name_prefix="lorebase-embed"
        )
        self.turns = Turns(at_once, cores_shared=cores_shared)
        self.dense = DenseArm(
            store,
            self.embedders,
            self.settings,
            self._embed_pool,
            languages,
            usage=usage,
            turns=self.turns,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        # A reranker call past its deadline is not waited for (its answer would be dropped).
        self._rerank_pool.shutdown(wait=False, cancel_futures=True)
        self._embed_pool.shutdown(wait=False, cancel_futures=True)

    def search(self, request: SearchRequest) -> SearchResponse:
        """``request`` answered; the reads on this thread in one snapshot where the store makes
        that cheap (the keyword arm reads on its own)."""
        with self.turns.turn(), self.store.snapshot():
            return self._search(request)

    def _search(self, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        warnings: list[str] = []
        notes: list[str] = []
        kbs = self._knowledge_bases(request)
        kb_ids = [kb.id for kb in kbs]
        limit = max(CANDIDATES, CANDIDATES_PER_RESULT * request.top_k)
        documents = self._documents(request, kb_ids)
        if request.filters and not documents:
            shown = "; ".join(map(str, request.filters))
            timings["total"] = elapsed_ms(started)
            return SearchResponse(
                hits=[],
                mode=request.mode,
                timings_ms=timings,
                notes=[
                    f"filter_matched_nothing: no document of these bases meets the filters "
                    f"({shown}); loosen them, or list the documents' fields"
                ],
            )

        keyword: Future[_Keyword] | None = None
        if request.mode in (Mode.HYBRID, Mode.KEYWORD):
            # Beside this search while it embeds the question, unless the cores are busy with
            # other searches (lorebase.search.turns).
            beside = request.mode is Mode.HYBRID and self.turns.room_beside()
            keyword = self._keyword(kb_ids, request.query, limit, documents, timings, beside=beside)
        dense = DenseResult()
        if request.mode in (Mode.HYBRID, Mode.DENSE):
            dense = self.dense.search(request.query, kbs, limit, documents, timings, warnings)
            notes += _reembedding(kbs, set(dense.keyword_only)) + dense.unread
            if keyword is None and (dense.ranking is None or dense.keyword_only):
                # Dense only, and some bases' (or every base's) embedder could not answer:
                # those bases answer by keyword.
                by_keyword = kb_ids if dense.ranking is None else dense.keyword_only
                keyword = self._keyword(
                    by_keyword, request.query, limit, documents, timings, beside=False
                )
        lexical = keyword.result() if keyword is not None else None
        if lexical is not None and lexical.damaged:
            names = ", ".join(kb.name for kb in kbs if kb.id in lexical.damaged)
            warnings.append(
                f"lexical_index_damaged: the keyword index of {names} was found damaged and is "
                "being rebuilt from the database; until then those bases answer by meaning only"
            )
            if request.mode is Mode.KEYWORD:  # the other arm answers for them
                unread = [kb for kb in kbs if kb.id in lexical.damaged]
                dense = self.dense.search(
                    request.query, unread, limit, documents, timings, warnings
                )
        if lexical is not None and dense.ranking is not None:
            self.dense.complete(dense, lexical.ranking, timings)

        fuse_started = time.perf_counter()
        arms, fused, kept, cosines = self._fused(request, kb_ids, lexical, dense)
        timings["fuse"] = elapsed_ms(fuse_started)

        hydrate_started = time.perf_counter()
        both = lexical is not None and dense.ranking is not None
        pool = Hydrated(
            self.store, kb_ids, Steps(arms.keyword, arms.dense, cosines, kept if both else None)
        )
        # The documents of what may be shown (an explanation shows every candidate).
        document_of = (
            self._known_documents.of(
                [item for item, _ in (fused if request.explain else kept)],
                lambda unknown: self.store.chunk_documents(kb_ids, unknown),
            )
            if request.collapse or request.explain
            else {}
        )
        order = [item for item, _ in kept]
        rerank_status: RerankStatus | None = None
        if request.rerank:
            order, rerank_status = self._reranked(
                request, arms, pool, order, timings, warnings, notes
            )
            hydrate_started += timings.get("rerank", 0.0) / 1000
        hits = self._finished(kb_ids, request, self._hits(request, pool, order, document_of))
        if not hits:
            notes += _empty(self.store, kbs)
        timings["hydrate"] = elapsed_ms(hydrate_started)
        timings["total"] = elapsed_ms(started)
        answered = dense.ranking is not None or request.mode is Mode.KEYWORD
        return SearchResponse(
            hits=hits,
            mode=request.mode if answered else Mode.KEYWORD,
            timings_ms=timings,
            warnings=warnings,
            notes=notes,
            rerank=rerank_status,
            identities=dense.identities,
            explanation=explained(arms, fused, kept, document_of) if request.explain else None,
            damaged=tuple(lexical.damaged) if lexical is not None else (),
        )

    # -- steps -------------------------------------------------------------------------------
    def _fused(
        self,
        request: SearchRequest,
        kb_ids: list[int],
        lexical: _Keyword | None,
        dense: DenseResult,
    ) -> tuple[Arms, Scored, Scored, dict[str, float]]:
        """Both arms, the fused order of every candidate, the candidates an arm supports (in
        that order), and every candidate's cosine."""
        both = lexical is not None and dense.ranking is not None
        arms = Arms(
            keyword=lexical.ranking if lexical is not None else [],
            dense=dense.ranking or [],
            evidence=dense.evidence if both else {},
        )
        fused = FUSIONS[request.fusion](arms) if both else arms.keyword or arms.dense
        ceiling = lexical.ceiling if lexical is not None else None
        if lexical is not None and self._unread_but_spoken(kb_ids, lexical.ranking, dense):
            ceiling = None  # any keyword match supports (see lorebase.search.floor)
        cosines = dense.cosines
        floor = request.no_answer_threshold
        threshold = dense.threshold if floor is None else floor
        kept = supported(fused, dict(arms.keyword), ceiling, cosines, threshold)
        return arms, fused, kept, cosines

    def _reranked(
        self,
        request: SearchRequest,
        arms: Arms,
        pool: Hydrated,
        order: list[str],
        timings: dict[str, float],
        warnings: list[str],
        notes: list[str],
    ) -> tuple[list[str], RerankStatus]:
        """The passages in the reranker's order (its first ``rerank_depth`` of them, the rest
        after in fused order), and what the step did."""
        if self.reranker is None:
            warnings.append(NOT_CONFIGURED)
            return order, UNAVAILABLE
        reread = rerank_depth(request.top_k)
        # A passage repeated in many files reaches the reranker once.
        looked_at = pool.hits(order[: reread + DUPLICATE_SLACK])
        head = without_repeats(looked_at, self._one_line)[:reread]
        with self.turns.aside():  # a reranker is another machine, or its own threads
            outcome = rerank_hits(
                self.reranker,
                self._rerank_pool,
                self.settings.rerank_deadline,
                request.query,
                head,
                reread,
                {name: r for name, r in (("keyword", arms.keyword), ("dense", arms.dense)) if r},
            )
        pool.adopt(outcome.hits)
        if outcome.ms is not None:
            timings["rerank"] = outcome.ms
        if outcome.message is not None:
            (warnings if outcome.warning else notes).append(outcome.message)
        moved = [hit.chunk_id for hit in outcome.hits]
        first = set(moved)
        return moved + [item for item in order if item not in first], outcome.status

    def _hits(
        self,
        request: SearchRequest,
        pool: Hydrated,
        order: list[str],
        document_of: dict[str, str],
    ) -> list[Hit]:
        """The first ``top_k`` passages as hits, one per document (its best, with up to
        PASSAGES_PER_HIT of its others) unless the request asks for every passage; a repeated
        passage is left out, and up to DUPLICATE_SLACK more groups looked at to fill its
        place."""
        groups = by_document(order, document_of) if request.collapse else [[i] for i in order]
        passages = PASSAGES_PER_HIT if request.collapse else 0
        depth = request.top_k + DUPLICATE_SLACK
        return first_hits(groups, pool.by_id, request.top_k, depth, passages, self._one_line)

    def _one_line(self, hit: Hit) -> str:
        """``hit``'s text on one line, as its snippet reads it: kept with the passages cut
        lately (a shown hit's text was put on one line twice a search, ~0.1 ms)."""
        return self._known_passages.one_line(hit.text, hit.provenance.language)

    def _keyword(
        self,
        kb_ids: list[int],
        query: str,
        limit: int,
        documents: Sequence[str] | None,
        timings: dict[str, float],
        beside: bool,
    ) -> Future[_Keyword]:
        """The keyword arm: ``beside`` the search on a thread of its own (it overlaps embedding
        the question), else run now on this one (nothing to overlap, or the other core is
        another search's)."""

        def run() -> _Keyword:
            with self.store.snapshot():  # the ceiling from the statistics the search ranked by
                ranking = self.store.keyword_search(kb_ids, query, limit, documents)
                ceiling = self.store.keyword_ceiling(kb_ids, query) if ranking else 0.0
            return _Keyword(ranking, ceiling, self.store.lexical_damage(kb_ids))

        if beside:
            return self._pool.submit(_timed, timings, "keyword", run)
        done: Future[_Keyword] = Future()
        done.set_result(_timed(timings, "keyword", run))  # what fails, fails the search now
        return done

    def _unread_but_spoken(self, kb_ids: list[int], keyword: Scored, dense: DenseResult) -> bool:
        """Whether no model searched reads the question while the base speaks its language:
        the best keyword passage is in the question's language."""
        if dense.reads_question or dense.language is None or not keyword:
            return False
        best = self.store.get_chunks(kb_ids, [keyword[0][0]])
        if not best:
            return False
        return self.dense.languages.detect(best[0].text).language == dense.language.language

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

    def _documents(self, request: SearchRequest, kb_ids: list[int]) -> Sequence[str] | None:
        """The documents both arms are restricted to (None: all): ``document_ids``, and the
        documents the path and language filters match (resolved here, before ranking)."""
        documents = list(request.document_ids) if request.document_ids is not None else None
        if request.path_prefix is None and request.language is None and not request.filters:
            return documents
        matching = self.store.matching_documents(
            kb_ids,
            path_prefix=request.path_prefix,
            language=request.language,
            conditions=request.filters,
        )
        if request.filters and not matching:  # a field no document has, or no match?
            known = self.store.field_names(kb_ids)
            unknown = unknown_fields(request.filters, known)
            if unknown:
                raise InvalidInput(unknown_field_message(unknown, known))
        if documents is None:
            return matching  # as the store gave it: what the arms derive from it is kept
        allowed = set(matching)
        return [document for document in documents if document in allowed]

    def _finished(self, kb_ids: list[int], request: SearchRequest, hits: list[Hit]) -> list[Hit]:
        """Cut to top_k; snippets (only for what is returned, passages included) and
        neighbours."""
        cut = snippets_for(request.query, kept=self._known_terms, passages=self._known_passages)

        def with_snippet(hit: Hit) -> Hit:
            found = cut(hit.text, hit.provenance.language)
            return replace(hit, snippet=found.text, highlights=found.marks)

        hits = hits[: request.top_k]
        known = self.store.document_fields(kb_ids, [hit.provenance.document_id for hit in hits])

        def fields_of(hit: Hit) -> dict[str, tuple[str, ...]]:
            found = known.get(hit.provenance.document_id, {})
            return {name: tuple(values) for name, values in found.items()}

        def finished(hit: Hit) -> Hit:
            found = cut(hit.text, hit.provenance.language)
            return replace(
                hit,
                snippet=found.text,
                highlights=found.marks,
                passages=tuple(map(with_snippet, hit.passages)),
                fields=fields_of(hit),
            )

        hits = list(map(finished, hits))
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


def _empty(store: SearchableStore, kbs: list[KnowledgeBase]) -> list[str]:
    """The note of a search that found nothing because its bases hold no document yet."""
    if any(store.get_kb_by_id(kb.id).documents for kb in kbs):
        return []
    if len(kbs) == 1:
        return [
            f"no_documents_yet: the knowledge base {kbs[0].name} has no documents yet; add "
            f"files with `lorebase add PATH --kb {kbs[0].name}`, or upload them"
        ]
    names = ", ".join(kb.name for kb in kbs)
    return [
        f"no_documents_yet: none of these knowledge bases has documents yet ({names}); add "
        "files with `lorebase add PATH --kb NAME`, or upload them"
    ]


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


def _timed(timings: dict[str, float], step: str, work: Callable[[], T]) -> T:
    started = time.perf_counter()
    try:
        return work()
    finally:
        timings[step] = elapsed_ms(started)
