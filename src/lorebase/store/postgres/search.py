"""The read half of the PostgreSQL store: the keyword engine (:class:`FullText`) and dense
search, on arguments the relational roles checked (:mod:`lorebase.store.relational`).

Functions here take an open connection and run inside the read snapshot the store holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from lorebase.analysis import query_variants
from lorebase.store.base import Scored
from lorebase.store.postgres import dense, lexical
from lorebase.store.postgres.lexical import Ranking
from lorebase.store.terms import bm25_ceiling


class FullText:
    """The keyword engine of the PostgreSQL store (see
    :class:`~lorebase.store.relational.role.KeywordEngine`): PostgreSQL full-text search over
    the chunks' lexemes, ranked by ``ranking`` (BM25, or ``ts_rank_cd`` to measure it). Its
    index is part of the database, never damaged on its own."""

    def __init__(self, ranking: Ranking = lexical.DEFAULT_RANKING) -> None:
        if ranking not in lexical.RANKINGS:
            raise ValueError(f"unknown ranking {ranking!r}")
        self.ranking = ranking

    def search(
        self,
        conn: Any,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None,
        languages: Mapping[int, frozenset[str]],
    ) -> Scored:
        """Ranked hits for raw user text analysed as the selected bases' languages; nothing is
        queried when no searchable term is left."""
        terms = lexical.query_terms(query, _union(languages))
        if not terms:
            return []
        plan = anchor_plan(conn, terms, kb_ids) if self.ranking == "bm25" else None
        sql, params = lexical.keyword_query(self.ranking, terms, kb_ids, limit, document_ids, plan)
        return [(str(chunk_id), float(score)) for chunk_id, score in conn.execute(sql, params)]

    def ceiling(
        self,
        conn: Any,
        kb_ids: Sequence[int],
        query: str,
        languages: Mapping[int, frozenset[str]],
    ) -> float:
        return keyword_ceiling(conn, kb_ids, query, _union(languages))

    def damaged(self, kb_ids: Sequence[int]) -> dict[int, str]:
        return {}


CEILING_COUNT_SHARE = 0.1
CEILING_COUNT_MIN = 10_000
"""For the keyword ceiling a term's chunks are counted up to this share of the selected ones,
at least this many, and never past half of them (past half a term has the floor idf either
way): a bounded walk through the GIN index. A term in more than that is taken as frequent,
its idf at the floor: the ceiling errs low, so keyword evidence is judged leniently, never
more strictly. Below 20k chunks every count is exact."""


def _union(languages: Mapping[int, frozenset[str]]) -> frozenset[str]:
    """The analyses of every selected base (their statistics are pooled)."""
    return frozenset().union(*languages.values())


def keyword_ceiling(
    conn: Any, kb_ids: Sequence[int], query: str, languages: Iterable[str] = ()
) -> float:
    """The most a chunk could score for raw user text (see
    :func:`lorebase.store.terms.bm25_ceiling`), from the statistics :meth:`FullText.search`
    ranks by: the selected bases' chunks, each term's matching chunks among them. A chunk
    matches the terms of its own language's analysis: the least of the analyses' ceilings."""
    variants = query_variants(query, languages)
    if not variants:
        return 0.0
    return min(_ceiling(conn, kb_ids, lexical.expanded(terms)) for terms in variants)


def _ceiling(conn: Any, kb_ids: Sequence[int], terms: list[str]) -> float:
    row = conn.execute(lexical.SELECTED_ROWS_SQL, (list(kb_ids),)).fetchone()
    rows = int(row[0]) if row is not None else 0
    cap = min(max(int(CEILING_COUNT_SHARE * rows), CEILING_COUNT_MIN), rows // 2) + 1
    counts = {"terms": list(terms), "kbs": list(kb_ids), "cap": cap}
    frequencies = [
        int(count) if count < cap else rows
        for _, _, count in conn.execute(lexical.term_counts_sql(), counts)
    ]
    return bm25_ceiling(frequencies, rows)


def dense_scores(
    conn: Any, kb_ids: Sequence[int], identity_id: int, query: np.ndarray, chunk_ids: Sequence[str]
) -> dict[str, float]:
    """The inner products :func:`dense_search` would give these chunks (its exact re-rank)."""
    rows = conn.execute(
        dense.scores_sql(identity_id),
        {"ids": list(dict.fromkeys(chunk_ids)), "kbs": list(kb_ids), "query": query},
    )
    return {str(chunk_id): float(score) for chunk_id, score in rows}


def anchor_plan(
    conn: Any, terms: Sequence[str], kb_ids: Sequence[int]
) -> lexical.AnchorPlan | None:
    """The anchored plan for a large selection (see :mod:`lexical`), None for the plain one."""
    row = conn.execute(lexical.SELECTED_ROWS_SQL, (list(kb_ids),)).fetchone()
    rows = int(row[0]) if row is not None else 0
    budget = lexical.anchor_budget(rows)
    if budget is None:
        return None
    counts = {"terms": list(terms), "kbs": list(kb_ids), "cap": budget + 1}
    counted = list(conn.execute(lexical.term_counts_sql(), counts))
    if sum(count for _, _, count in counted) <= budget:
        return None  # every term counted, and scoring them all is cheap: the plain plan
    stats = lexical.lexeme_frequencies(conn.execute(lexical.LEXEME_STATS_SQL).fetchone())
    dfs: dict[int, float] = {}
    for number, lexemes, count in counted:
        if count <= budget:
            dfs[number] = float(count)
            continue
        share = stats.get(lexemes[0]) if stats is not None and len(lexemes or []) == 1 else None
        if share is not None:
            dfs[number] = max(float(budget + 1), share * rows)
            continue
        cap = rows + 1 if stats is None else lexical.MAX_SCORED_ROWS + 1
        term = {"term": terms[number - 1], "kbs": list(kb_ids), "cap": cap}
        recount = int(conn.execute(lexical.term_count_sql(), term).fetchone()[0])
        known = stats[""] * rows if stats is not None else 0.0
        dfs[number] = float(recount) if recount < cap else max(float(cap), known)
    return lexical.plan_anchors(dfs, budget)


def dense_search(
    conn: Any,
    kb_ids: Sequence[int],
    identity_id: int,
    dim: int,
    query: np.ndarray,
    limit: int,
    document_ids: Sequence[str] | None,
    *,
    exact_rows: int = dense.EXACT_MAX_ROWS,
) -> Scored:
    """Candidates (exact scan or HNSW, see :mod:`dense`), re-ranked with exact vectors."""
    n = dense.candidates(limit)
    params: dict[str, object] = {"kbs": list(kb_ids), "query": query, "n": n}
    seqs: list[int] | None = None
    if document_ids is None and dense.create_index_sql(identity_id, dim) is not None:
        capped = {"kbs": params["kbs"], "cap": exact_rows + 1}
        row = conn.execute(dense.count_sql(identity_id), capped).fetchone()
        rows = int(row[0]) if row is not None else 0
        if rows > exact_rows:
            for setting in dense.hnsw_settings_sql(n):
                conn.execute(setting)
            found = conn.execute(dense.hnsw_candidates_sql(identity_id, dim), params).fetchall()
            conn.execute(dense.after_hnsw_sql())
            if len(found) >= min(n, rows):
                seqs = [int(r[0]) for r in found]
    if seqs is None:
        if document_ids is not None:
            params["documents"] = list(document_ids)
        sql = dense.exact_candidates_sql(identity_id, with_documents=document_ids is not None)
        seqs = [int(r[0]) for r in conn.execute(sql, params)]
    if not seqs:
        return []
    rerank = {"seqs": seqs, "query": query, "limit": limit}
    return [
        (str(chunk_id), float(score))
        for chunk_id, score in conn.execute(dense.rerank_sql(identity_id), rerank)
    ]
