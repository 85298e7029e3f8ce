"""FTS5 query escaping and the SQL around the lexical index, as pure functions.

User text never reaches FTS5 as syntax: every whitespace-separated term becomes a quoted FTS5
string (a phrase of whatever tokens the tokenizer finds in it), so ``AND``, ``NEAR(``, ``*``,
``col:term``, ``^`` and stray quotes are just words. Terms are OR-joined and ranked by BM25.

The index is an *external-content* FTS5 table over the view ``chunks_fts_source``: the chunk
text is stored once (in ``chunks``); FTS5 keeps only its inverted index and per-row sizes.
The price is that deleting needs the exact values that were indexed. Both directions therefore
select from the same view, by document or by knowledge base, inside the write transaction and
*before* the rows behind the view change (see :func:`fts_insert_sql`, :func:`fts_delete_sql`).
"""

from __future__ import annotations

from collections.abc import Sequence

from lorebase.stopwords import without_stop_words

FTS_TABLE = "chunks_fts"
FTS_SOURCE_VIEW = "chunks_fts_source"
FTS_COLUMNS = ("title", "headings", "path", "symbol", "body")
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""Porter stemming over unicode61; ``remove_diacritics 2`` folds accents (``configuracao``
finds ``Configuração``)."""

# BM25 column weights, in FTS_COLUMNS order. Words in a document's title, a heading or a code
# symbol say more about a chunk than the same word in its body; reasonable, not tuned.
TITLE_WEIGHT = 2.0
HEADINGS_WEIGHT = 2.0
PATH_WEIGHT = 1.0
SYMBOL_WEIGHT = 2.0
BODY_WEIGHT = 1.0
COLUMN_WEIGHTS = (TITLE_WEIGHT, HEADINGS_WEIGHT, PATH_WEIGHT, SYMBOL_WEIGHT, BODY_WEIGHT)

MAX_QUERY_TERMS = 32
"""Terms beyond this are dropped: OR queries cost grows with every term (FACTS.md)."""

HEADINGS_SEPARATOR = " > "

_DROPPED_CHARACTERS = {0: " "}
"""NUL ends a string inside FTS5's query parser ("unterminated string"); it becomes a space."""


def query_terms(text: str) -> list[str]:
    """The distinct search terms of raw user text, in order, at most ``MAX_QUERY_TERMS``.

    Split on whitespace; a term without any letter or digit cannot match a token and is
    dropped; duplicates (ignoring case) are dropped.
    """
    cleaned = "".join(ch for ch in text.translate(_DROPPED_CHARACTERS) if not _is_surrogate(ch))
    terms: list[str] = []
    seen: set[str] = set()
    for term in cleaned.split():
        if not any(ch.isalnum() for ch in term):
            continue
        folded = term.casefold()
        if folded in seen:
            continue
        seen.add(folded)
        terms.append(term)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def quote_term(term: str) -> str:
    """One term as an FTS5 string: wrapped in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def build_match_query(text: str) -> str | None:
    """The FTS5 MATCH expression for raw user text (terms OR-joined, stop words left out when
    other words remain), or None when nothing searchable is left, in which case the caller
    returns no hits without querying."""
    terms = without_stop_words(query_terms(text))
    if not terms:
        return None
    return " OR ".join(quote_term(term) for term in terms)


# The path column: separators as spaces, so `handbook` matches `docs/handbook.docx` (the
# tokenizer splits on `.` itself).
PATH_TEXT_SQL = "replace(replace(d.path, '/', ' '), '\\', ' ')"


def headings_text(trail: Sequence[str]) -> str:
    """What the headings column indexes: the trail, outermost first, joined by `` > ``."""
    return HEADINGS_SEPARATOR.join(trail)


def source_view_sql() -> str:
    """The view FTS5 reads as its content table: one row per chunk with the five indexed
    columns, plus ``kb_id`` and ``document_id`` to select rows for insert and delete.

    Headings come from the chunk's section (stored once per section); FTS5 cannot read a view
    that calls ``json_each`` (its rebuild fails with "SQL logic error" on SQLite 3.40).
    """
    return (
        f"CREATE VIEW {FTS_SOURCE_VIEW} AS SELECT "
        "c.rowid AS chunk_rowid, d.kb_id AS kb_id, c.document_id AS document_id, "
        "coalesce(d.title, '') AS title, s.headings AS headings, "
        f"{PATH_TEXT_SQL} AS path, coalesce(c.symbol, '') AS symbol, c.text AS body "
        "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
        "JOIN sections AS s ON s.id = c.section_id"
    )


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
    values they were indexed with. Run *before* the chunk, section or document rows change."""
    columns = ", ".join(FTS_COLUMNS)
    return (
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, {columns}) "
        f"SELECT 'delete', chunk_rowid, {columns} FROM {FTS_SOURCE_VIEW} "
        f"WHERE {_filter_column(by)} = ?"
    )


def keyword_search_sql(*, with_documents: bool) -> str:
    """BM25 search scoped to knowledge bases (and optionally documents).

    Parameters, in order: the MATCH expression, a JSON array of knowledge base ids, [a JSON
    array of document ids,] the limit. JSON arrays keep the parameter count fixed however many
    ids there are. Scores come back negated: FTS5's bm25 is lower-is-better.
    """
    weights = ", ".join(repr(weight) for weight in COLUMN_WEIGHTS)
    documents = " AND c.document_id IN (SELECT value FROM json_each(?))" if with_documents else ""
    return (
        f"SELECT c.id, -bm25({FTS_TABLE}, {weights}) AS score "
        f"FROM {FTS_TABLE} CROSS JOIN chunks AS c ON c.rowid = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH ? AND c.kb_id IN (SELECT value FROM json_each(?))"
        f"{documents} ORDER BY score DESC, c.rowid LIMIT ?"
    )


def _filter_column(by: str) -> str:
    if by not in ("document_id", "kb_id"):
        raise ValueError(f"cannot select index rows by {by!r}")
    return by


def _is_surrogate(ch: str) -> bool:
    """Lone surrogates cannot be encoded as UTF-8 for SQLite."""
    return "\ud800" <= ch <= "\udfff"
