"""FTS5 query escaping and the SQL around the lexical index, as pure functions.

User text never reaches FTS5 as syntax: every whitespace-separated term becomes a quoted FTS5
string (a phrase of whatever tokens the tokenizer finds in it), so ``AND``, ``NEAR(``, ``*``,
``col:term``, ``^`` and stray quotes are just words. Terms are OR-joined and ranked by BM25;
on large indexes the OR query is split by term frequency (see :func:`split_match_queries`).

The index is an *external-content* FTS5 table over the view ``chunks_fts_source``: the chunk
text is stored once (in ``chunks``); FTS5 keeps only its inverted index and per-row sizes.
The price is that deleting needs the exact values that were indexed. Both directions therefore
select from the same view, by document or by knowledge base, inside the write transaction and
*before* the rows behind the view change (see :func:`fts_insert_sql`, :func:`fts_delete_sql`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from lorebase.store.terms import ANCHOR_SHARE as ANCHOR_SHARE
from lorebase.store.terms import FIELD_WEIGHTS, LEXICAL_FIELDS
from lorebase.store.terms import HEADINGS_SEPARATOR as HEADINGS_SEPARATOR
from lorebase.store.terms import MAX_QUERY_TERMS as MAX_QUERY_TERMS
from lorebase.store.terms import SPLIT_FROM_ROWS as SPLIT_FROM_ROWS
from lorebase.store.terms import headings_text as headings_text
from lorebase.store.terms import query_terms as query_terms
from lorebase.store.terms import search_terms as search_terms

FTS_TABLE = "chunks_fts"
FTS_SOURCE_VIEW = "chunks_fts_source"
FTS_COLUMNS = LEXICAL_FIELDS
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""Porter stemming over unicode61; ``remove_diacritics 2`` folds accents (``configuracao``
finds ``Configuração``)."""

COLUMN_WEIGHTS = FIELD_WEIGHTS
"""BM25 column weights, in FTS_COLUMNS order (see :mod:`lorebase.store.terms`)."""


def quote_term(term: str) -> str:
    """One term as an FTS5 string: wrapped in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def match_any(terms: Sequence[str]) -> str:
    """Rows holding any of the terms: quoted terms OR-joined."""
    return " OR ".join(quote_term(term) for term in terms)


def build_match_query(text: str) -> str | None:
    """The FTS5 MATCH expression for raw user text (terms OR-joined, stop words left out when
    other words remain), or None when nothing searchable is left, in which case the caller
    returns no hits without querying."""
    terms = search_terms(text)
    if not terms:
        return None
    return match_any(terms)


# -- the query plan for large indexes ---------------------------------------------------------
#
# ``ORDER BY bm25 LIMIT n`` over an OR query scores every row holding any term: at 100k+
# chunks a word like "what" (in a third of the rows) costs hundreds of milliseconds. The plan
# below takes the rarest terms as *anchors* (as many as fit a budget of rows) and runs
#
#   (others OR ...) AND (anchor OR ...)     rows with anchors and other terms
#   (anchor OR ...) NOT (others OR ...)     rows with anchors only
#
# Each phrase appears once per expression, and bm25() takes each phrase's document frequency
# from the whole index (not from the rows matched), so a row's score in either query equals
# its plain-OR score; the two row sets are disjoint, and merging them by score gives the
# plain-OR order *of every row holding an anchor*. What is left out is rows holding only the
# frequent terms, which carry the least weight (BM25's idf falls with document frequency), and
# the frequent terms' long row lists are only seeked into where an anchor is, never walked.

DF_CAP_SHARE = 0.1
"""Document frequencies are counted up to this share of the rows (a bounded walk); anything
above is simply frequent."""
TERM_STATS_TABLE = "temp.lorebase_term_stats"


def choose_anchors(frequencies: dict[str, int], budget: int) -> list[str]:
    """The rarest terms whose document frequencies sum to at most ``budget`` (always at least
    the rarest one), in query order. Pure: frequencies in, terms out."""
    terms = list(frequencies)
    ranked = sorted(terms, key=lambda term: (frequencies[term], terms.index(term)))
    chosen: list[str] = []
    total = 0
    for term in ranked:
        if chosen and total + frequencies[term] > budget:
            break
        chosen.append(term)
        total += frequencies[term]
    return [term for term in terms if term in chosen]


def split_match_queries(anchors: Sequence[str], others: Sequence[str]) -> tuple[str, str]:
    """The two MATCH expressions of the split plan: rows with anchors and other terms, then
    rows with anchors only."""
    anchor, other = f"({match_any(anchors)})", f"({match_any(others)})"
    return f"{other} AND {anchor}", f"{anchor} NOT {other}"


def indexed_rows_sql() -> str:
    """An upper bound on the rows in the index, read in O(log n): the largest chunk rowid."""
    return "SELECT coalesce(max(rowid), 0) FROM chunks"


def indexed_rows_count_sql() -> str:
    """The rows in the index, as FTS5's ``bm25()`` counts them (every chunk)."""
    return "SELECT count(*) FROM chunks"


def term_count_sql() -> str:
    """How many rows match a term, counted up to a cap (parameters: MATCH expression, cap):
    walks at most ``cap`` entries of the term's row list."""
    return f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT ?)"


def term_stats_sql() -> tuple[str, str, str]:
    """Create, read and write the per-connection cache of term frequencies: a TEMP table, so
    it lives and dies with the connection and needs no migration. Keyed by the case-folded
    term and the (bucketed) row count it was counted at."""
    return (
        f"CREATE TABLE IF NOT EXISTS {TERM_STATS_TABLE} "
        "(term TEXT NOT NULL, rows INTEGER NOT NULL, df INTEGER NOT NULL, "
        "PRIMARY KEY (term, rows))",
        f"SELECT df FROM {TERM_STATS_TABLE} WHERE term = ? AND rows = ?",
        f"INSERT OR REPLACE INTO {TERM_STATS_TABLE} (term, rows, df) VALUES (?, ?, ?)",
    )


def stats_bucket(rows: int) -> int:
    """The row count a cached term frequency stands for, rounded down to two significant
    digits: the cache survives small writes (the plan needs magnitudes, not exact counts;
    scores never use them) and is counted afresh as the index grows."""
    if rows < 100:
        return rows
    scale = int(10 ** (len(str(rows)) - 2))
    return rows // scale * scale


# The path column: separators as spaces, so `handbook` matches `docs/handbook.docx` (the
# tokenizer splits on `.` itself).
PATH_TEXT_SQL = "replace(replace(d.path, '/', ' '), '\\', ' ')"

CHUNK_TEXT_FUNCTION = "chunk_text"
"""``chunk_text(text, id)``: a chunk's text from its stored value, compressed or not (a SQL
function every connection of :mod:`lorebase.store.sqlite.database` has)."""
CHUNK_TEXT_SQL = f"{CHUNK_TEXT_FUNCTION}(c.text, c.id)"


def source_view_sql(body: str = CHUNK_TEXT_SQL) -> str:
    """The view FTS5 reads as its content table: one row per chunk with the five indexed
    columns, plus ``kb_id`` and ``document_id`` to select rows for insert and delete.

    Headings come from the chunk's section (stored once per section); FTS5 cannot read a view
    that calls ``json_each`` (its rebuild fails with "SQL logic error" on SQLite 3.40).
    ``body``: the chunk's text; migration 2 made the view over ``c.text`` as stored, before
    chunk texts were compressed, and migration 21 made it again through ``chunk_text``.
    """
    return (
        f"CREATE VIEW {FTS_SOURCE_VIEW} AS SELECT "
        "c.rowid AS chunk_rowid, d.kb_id AS kb_id, c.document_id AS document_id, "
        "coalesce(d.title, '') AS title, s.headings AS headings, "
        f"{PATH_TEXT_SQL} AS path, coalesce(c.symbol, '') AS symbol, {body} AS body "
        "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
        "JOIN sections AS s ON s.id = c.section_id"
    )


def recreate_source_view_sql() -> tuple[str, str]:
    """Drop the source view and make it again as :func:`source_view_sql` makes it now. What
    the index holds stays valid: the view gives every row the values it gave before."""
    return (f"DROP VIEW IF EXISTS {FTS_SOURCE_VIEW}", source_view_sql())


def create_fts_sql() -> str:
    columns = ", ".join(FTS_COLUMNS)
    return (
        f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5({columns}, "
        f"content='{FTS_SOURCE_VIEW}', content_rowid='chunk_rowid', "
        f"tokenize='{FTS_TOKENIZER}')"
    )


def rebuild_fts_sql() -> str:
    """Re-index every row of the view (after a migration, or to repair the index)."""
    return f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"


def integrity_check_sql() -> str:
    """Fails when the index disagrees with the rows of the view (rank 1: compare content)."""
    return f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)"


def fts_insert_sql(by: str) -> str:
    """Index the view's rows where ``by`` (``document_id`` or ``kb_id``) equals the parameter.
    Run after the chunk and section rows are written."""
    columns = ", ".join(FTS_COLUMNS)
    return (
        f"INSERT INTO {FTS_TABLE}(rowid, {columns}) "
        f"SELECT chunk_rowid, {columns} FROM {FTS_SOURCE_VIEW} WHERE {_filter_column(by)} = ?"
    )


def fts_delete_sql(by: str) -> str:
    """Remove the view's rows where ``by`` equals the parameter from the index, with the
    values they were indexed with. Run *before* the chunk, section or document rows change.

    A chunk whose stored text does not decompress (a damaged row: its ``body`` is NULL) is
    left out (deleting it with other values than it was indexed with would break the index's
    counts): fewer rows are deleted than :func:`chunk_count_sql` counts, and the caller
    rebuilds the index once those chunks are gone."""
    columns = ", ".join(FTS_COLUMNS)
    return (
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, {columns}) "
        f"SELECT 'delete', chunk_rowid, {columns} FROM {FTS_SOURCE_VIEW} "
        f"WHERE {_filter_column(by)} = ? AND body IS NOT NULL"
    )


def chunk_count_sql(by: str) -> str:
    """The chunks where ``by`` equals the parameter (what :func:`fts_delete_sql` deletes
    when none is damaged)."""
    return f"SELECT count(*) FROM chunks WHERE {_filter_column(by)} = ?"


def keyword_search_sql(*, with_documents: bool) -> str:
    """BM25 search scoped to knowledge bases (and optionally documents).

    Parameters, in order: the MATCH expression, a JSON array of knowledge base ids, [a JSON
    array of document ids,] the limit. JSON arrays keep the parameter count fixed however many
    ids there are. Rows are ``(chunk id, score, rowid)``; scores come back negated (FTS5's
    bm25 is lower-is-better) and ties are broken by rowid, so results of several queries merge
    into the order one query would give.
    """
    weights = ", ".join(repr(weight) for weight in COLUMN_WEIGHTS)
    documents = " AND c.document_id IN (SELECT value FROM json_each(?))" if with_documents else ""
    return (
        f"SELECT c.id, -bm25({FTS_TABLE}, {weights}) AS score, c.rowid "
        f"FROM {FTS_TABLE} CROSS JOIN chunks AS c ON c.rowid = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH ? AND c.kb_id IN (SELECT value FROM json_each(?))"
        f"{documents} ORDER BY score DESC, c.rowid LIMIT ?"
    )


def fts_present(conn: sqlite3.Connection) -> bool:
    """Whether this database keeps the FTS5 index (the ``fts5`` lexical engine): writes
    maintain it only then. Reads the schema SQLite holds in memory."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (FTS_TABLE,)
    ).fetchone()
    return found is not None


def use_fts(conn: sqlite3.Connection, keep: bool) -> None:
    """Create and fill the FTS5 index (``keep``) or drop it, in one write transaction, when
    the database is not that way already. The index is derived from the chunks table either
    way, so switching engines loses nothing."""
    if fts_present(conn) == keep:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if fts_present(conn) != keep:  # again, under the write lock: another process?
            if keep:
                conn.execute(create_fts_sql())
                conn.execute(rebuild_fts_sql())
            else:
                conn.execute(f"DROP TABLE {FTS_TABLE}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _filter_column(by: str) -> str:
    if by not in ("document_id", "kb_id"):
        raise ValueError(f"cannot select index rows by {by!r}")
    return by
