"""The read half of the SQLite store: keyword search over FTS5 and merging the dense results
of several bases (the vector indexes themselves are in :mod:`.dense`), on arguments the
relational roles checked (:mod:`lorebase.store.relational`).

Functions here take an open connection and run inside whatever transaction the store holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from lorebase.store.base import Scored
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.rows import (
    json_ids,
)
from lorebase.store.terms import bm25_ceiling

_KB_FILTER = "c.kb_id IN (SELECT value FROM json_each(?))"


def keyword_search(
    conn: sqlite3.Connection,
    kb_ids: Sequence[int],
    query: str,
    limit: int,
    document_ids: Sequence[str] | None,
) -> Scored:
    """BM25 hits for raw user text; nothing is queried when no searchable term is left.

    On a large index the OR query runs as the split plan of :mod:`fts` (common terms counted
    only in rows that hold a rare one); the results of its queries are merged by score, then
    rowid, as one query orders them.
    """
    terms = fts.search_terms(query)
    if not terms:
        return []
    base: list[object] = [json_ids(kb_ids)]
    if document_ids is not None:
        base.append(json_ids(document_ids))
    sql = fts.keyword_search_sql(with_documents=document_ids is not None)
    plan = keyword_plan(conn, terms)
    rows: list[tuple[str, float, int]] = []
    for match in plan:
        rows.extend(conn.execute(sql, [match, *base, limit]))
    if len(plan) > 1:
        rows = merge_ranked(rows, limit)
    return [(chunk_id, float(score)) for chunk_id, score, _ in rows]


def keyword_ceiling(conn: sqlite3.Connection, kb_ids: Sequence[int], query: str) -> float:
    """The most a chunk could score for raw user text (see
    :func:`lorebase.store.terms.bm25_ceiling`), from the statistics FTS5's ``bm25()`` uses:
    every row of the index, and each term's rows counted up to half of them (a term in more
    has the floor idf either way)."""
    terms = fts.search_terms(query)
    if not terms:
        return 0.0
    rows = int(conn.execute(fts.indexed_rows_count_sql()).fetchone()[0])
    cap = rows // 2 + 1
    frequencies = [
        int(conn.execute(fts.term_count_sql(), (fts.quote_term(term), cap)).fetchone()[0])
        for term in terms
    ]
    return bm25_ceiling(frequencies, rows)


def keyword_plan(conn: sqlite3.Connection, terms: Sequence[str]) -> list[str]:
    """The MATCH expressions to run for these terms: the plain OR query, or on a large index
    whose terms would make it score many rows, the two queries of the split plan."""
    if len(terms) < 2:
        return [fts.match_any(terms)]
    rows = conn.execute(fts.indexed_rows_sql()).fetchone()[0]
    if rows < fts.SPLIT_FROM_ROWS:
        return [fts.match_any(terms)]
    frequencies = term_frequencies(conn, terms, rows)
    budget = int(fts.ANCHOR_SHARE * rows)
    if sum(frequencies.values()) <= budget:
        return [fts.match_any(terms)]
    anchors = fts.choose_anchors(frequencies, budget)
    others = [term for term in terms if term not in anchors]
    if not others:
        return [fts.match_any(terms)]
    return list(fts.split_match_queries(anchors, others))


def term_frequencies(conn: sqlite3.Connection, terms: Sequence[str], rows: int) -> dict[str, int]:
    """Each term's document frequency, counted up to ``DF_CAP_SHARE`` of the rows and
    remembered per connection (see :func:`fts.term_stats_sql`)."""
    create, read, write = fts.term_stats_sql()
    conn.execute(create)
    bucket = fts.stats_bucket(rows)
    cap = max(1, int(fts.DF_CAP_SHARE * rows))
    frequencies: dict[str, int] = {}
    for term in terms:
        folded = term.casefold()
        cached = conn.execute(read, (folded, bucket)).fetchone()
        if cached is None:
            cached = conn.execute(fts.term_count_sql(), (fts.quote_term(term), cap)).fetchone()
            conn.execute(write, (folded, bucket, cached[0]))
        frequencies[term] = int(cached[0])
    return frequencies


def merge_ranked(rows: list[tuple[str, float, int]], limit: int) -> list[tuple[str, float, int]]:
    """The best ``limit`` of several ranked lists: score descending, then rowid (the order of
    one ``keyword_search_sql`` query), each chunk once."""
    seen: set[str] = set()
    merged = []
    for row in sorted(rows, key=lambda row: (-row[1], row[2])):
        if row[0] not in seen:
            seen.add(row[0])
            merged.append(row)
    return merged[:limit]


def merge_top(results: Sequence[Scored], limit: int) -> Scored:
    """The best ``limit`` hits over several per-base lists (stable for equal scores)."""
    merged = [hit for result in results for hit in result]
    merged.sort(key=lambda hit: -hit[1])
    return merged[:limit]
