"""Dense search over pgvector, as pure functions and constants.

Vectors are stored as ``halfvec`` (half the bytes of float32) in one table for every identity;
each identity gets a partial HNSW index over ``vector::halfvec(DIM)`` restricted to its rows,
made when the identity is first registered. A query names the identity and dimension as
literals (numbers read from the database, never user text) so that its ``ORDER BY`` expression
and ``WHERE`` clause match the index's: a prepared, generic plan could not prove the partial
index's predicate.

A search first picks candidates by their ``halfvec`` score, then re-ranks them with the exact
float32 vectors, which the reuse cache holds once per content hash:

- **exact** when the selected bases hold at most :data:`EXACT_MAX_ROWS` vectors of the
  identity, or the search is limited to some documents: a scan of just those rows (through the
  ``(identity_id, kb_id)`` index), every row scored, so a filter never costs recall;
- **HNSW** above it, with pgvector 0.8's iterative scan (``relaxed_order``) so that a filter on
  the bases keeps walking the graph until enough rows pass it; should it still come back short
  (a tiny share of a huge identity), the exact scan answers instead.
"""

from __future__ import annotations

EXACT_MAX_ROWS = 20_000
"""Up to this many vectors in the selected bases, scan them all (no index). A scan reads each
``halfvec`` once (20k x 384 dimensions is 15 MB, ~10 ms); an HNSW search costs about that much
(ef_search in the hundreds, the re-rank, the filter's wasted visits), and past this size the
scan grows with the base while HNSW does not. Below it a scan is as fast, needs no graph in
memory, and has perfect recall however few of the identity's vectors the bases hold."""

HNSW_MAX_DIM = 4000
"""pgvector indexes ``halfvec`` of up to 4,000 dimensions; a larger identity is scanned."""

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
"""pgvector's defaults."""

CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 40
MAX_CANDIDATES = 1000
"""Candidates re-ranked exactly: several times the hits asked for, so that half-precision
rounding (or the graph's approximation) does not decide the order at the cut."""

ITERATIVE_SCAN = "relaxed_order"
MIN_EF_SEARCH = 100
"""The graph's search breadth at least this (pgvector's default is 40): measured by
``bench/pg_filtered.py`` on 135k clustered 384-d vectors in three bases, recall@10 against the
exact answer was 0.96 at ef_search 40, whether the base searched held 74 % or 22 % of the
identity's vectors (the iterative scan keeps a filter from costing recall)."""


def candidates(limit: int) -> int:
    return min(MAX_CANDIDATES, max(MIN_CANDIDATES, CANDIDATE_FACTOR * limit))


def index_name(identity_id: int) -> str:
    return f"vectors_hnsw_{int(identity_id)}"


def create_index_sql(identity_id: int, dim: int) -> str | None:
    """The partial HNSW index of one identity (None: too many dimensions to index)."""
    if not 0 < dim <= HNSW_MAX_DIM:
        return None
    return (
        f"CREATE INDEX IF NOT EXISTS {index_name(identity_id)} ON vectors USING hnsw "
        f"((vector::halfvec({int(dim)})) halfvec_ip_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE identity_id = {int(identity_id)}"
    )


def count_sql(identity_id: int) -> str:
    """How many vectors of the identity the bases hold, counted up to a cap (parameters:
    ``kbs``, ``cap``)."""
    return (
        "SELECT count(*) FROM (SELECT 1 FROM vectors WHERE "
        f"identity_id = {int(identity_id)} AND kb_id = ANY(%(kbs)s) LIMIT %(cap)s) AS capped"
    )


def hnsw_settings_sql(ef_search: int) -> tuple[str, ...]:
    """Before the HNSW query: iterative scans, the search breadth, and no explicit sort, so
    the planner takes the order from the HNSW index rather than sorting what the
    ``(identity_id, kb_id)`` index finds (its choice when it thinks the bases hold few rows;
    we know they hold many). :func:`after_hnsw_sql` allows sorts again."""
    return (
        f"SET LOCAL hnsw.iterative_scan = {ITERATIVE_SCAN}",
        f"SET LOCAL hnsw.ef_search = {min(max(int(ef_search), MIN_EF_SEARCH), MAX_CANDIDATES)}",
        "SET LOCAL enable_sort = off",
    )


def after_hnsw_sql() -> str:
    return "SET LOCAL enable_sort = on"


def hnsw_candidates_sql(identity_id: int, dim: int) -> str:
    """Candidates through the identity's HNSW index: the same expression and predicate as the
    index (parameters: ``query``, ``kbs``, ``n``)."""
    expression = f"v.vector::halfvec({int(dim)})"
    return (
        f"SELECT v.chunk_seq FROM vectors AS v WHERE v.identity_id = {int(identity_id)} "
        f"AND v.kb_id = ANY(%(kbs)s) "
        f"ORDER BY {expression} <#> %(query)s::vector::halfvec({int(dim)}) LIMIT %(n)s"
    )


def exact_candidates_sql(identity_id: int, *, with_documents: bool) -> str:
    """Candidates by scanning every vector of the bases (or of some documents): an expression
    no index has, so no index is used (parameters: ``query``, ``kbs``, ``n`` [, ``documents``])."""
    if with_documents:
        return (
            "SELECT v.chunk_seq FROM chunks AS c JOIN vectors AS v ON v.chunk_seq = c.seq "
            f"AND v.identity_id = {int(identity_id)} "
            "WHERE c.document_id = ANY(%(documents)s) AND c.kb_id = ANY(%(kbs)s) "
            "ORDER BY v.vector <#> %(query)s::vector::halfvec LIMIT %(n)s"
        )
    return (
        f"SELECT v.chunk_seq FROM vectors AS v WHERE v.identity_id = {int(identity_id)} "
        "AND v.kb_id = ANY(%(kbs)s) ORDER BY v.vector <#> %(query)s::vector::halfvec "
        "LIMIT %(n)s"
    )


def scores_sql(identity_id: int) -> str:
    """Some chunks' exact inner products, as :func:`rerank_sql` computes them (parameters:
    ``ids``, ``kbs``, ``query``)."""
    identity = int(identity_id)
    return (
        "SELECT c.id, -coalesce(e.vector <#> %(query)s::vector, "
        "v.vector <#> %(query)s::vector::halfvec) AS score "
        "FROM chunks AS c "
        f"JOIN vectors AS v ON v.chunk_seq = c.seq AND v.identity_id = {identity} "
        "LEFT JOIN embedding_cache AS e ON e.content_hash = v.content_hash "
        f"AND e.identity_id = {identity} "
        "WHERE c.id = ANY(%(ids)s) AND c.kb_id = ANY(%(kbs)s)"
    )


def rerank_sql(identity_id: int) -> str:
    """The candidates' exact inner products (the cache's float32 vector; the stored halfvec
    should a cache row be missing), best first, ties by chunk order (parameters: ``seqs``,
    ``query``, ``limit``)."""
    identity = int(identity_id)
    return (
        "SELECT c.id, -coalesce(e.vector <#> %(query)s::vector, "
        "v.vector <#> %(query)s::vector::halfvec) AS score "
        "FROM unnest(%(seqs)s::bigint[]) AS s(seq) "
        f"JOIN vectors AS v ON v.chunk_seq = s.seq AND v.identity_id = {identity} "
        "JOIN chunks AS c ON c.seq = s.seq "
        "LEFT JOIN embedding_cache AS e ON e.content_hash = v.content_hash "
        f"AND e.identity_id = {identity} "
        "ORDER BY score DESC, c.seq LIMIT %(limit)s"
    )
