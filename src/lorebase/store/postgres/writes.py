"""The write half of the PostgreSQL store, as functions over a connection in a transaction.

Locks are taken in one order everywhere, so concurrent writers (other threads, other
processes) wait for each other instead of deadlocking: the base's row first (``FOR KEY
SHARE``: writers of one base do not block each other; deleting the base waits for them), then
document rows (by path or id, in sorted order when several), then their chunks, then reuse
cache rows in content-hash order. Nothing that every writer of a base would update (a counter,
a generation) lives in a shared row: the PostgreSQL store keeps no in-memory index to refresh.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lorebase.errors import Conflict, InvalidInput, NotFound, SourceRemoved
from lorebase.store import stored_chunk_id
from lorebase.store.base import DocumentRecord, DocumentState, KnowledgeBase, NewDocument
from lorebase.store.base import new_document_id as new_id
from lorebase.store.postgres import lexical
from lorebase.store.records import (
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    KB_COLUMNS,
    KB_EMBEDDING_COLUMNS,
    MOVED,
    SOURCE_REMOVED,
    document_from_row,
    document_values,
    kb_from_row,
    refuses_vectors,
    sections_of,
    trail_json,
)
from lorebase.store.terms import headings_text
from lorebase.types import Chunk

NO_KB = "no such knowledge base; list them to see the names"
NO_DOCUMENT = "no such document in this knowledge base; list its documents to see their ids"
UPLOAD_LOCK = 0x6C62_7570  # "lbup": one upload of given bytes per base at a time

KB_TOTALS_SQL = (
    "SELECT kb_id, count(*), count(*) FILTER (WHERE state = 'indexed'), "
    "count(*) FILTER (WHERE state = 'failed'), coalesce(sum(chunk_count), 0)::bigint, "
    "coalesce(sum(size), 0)::bigint, count(*) FILTER (WHERE state NOT IN ('indexed', 'failed')), "
    "count(*) FILTER (WHERE chunk_count > 0), "
    "count(*) FILTER (WHERE chunk_count > 0 AND identity_key IS NOT NULL), "
    "coalesce(sum(chunk_count) FILTER (WHERE identity_key IS NOT NULL), 0)::bigint "
    "FROM documents"
)
"""Totals of documents, append ``WHERE kb_id = %s`` (one base) or ``GROUP BY kb_id``."""

_CHUNK_ARRAYS = (  # column, array type: the chunks of a document go in as one INSERT ... unnest
    ("id", "text"),
    ("section_id", "bigint"),
    ("ordinal", "integer"),
    ("text", "text"),
    ("trail", "text"),
    ("start_offset", "integer"),
    ("end_offset", "integer"),
    ("line", "integer"),
    ("page", "integer"),
    ("page_end", "integer"),
    ("content_kind", "text"),
    ("language", "text"),
    ("symbol", "text"),
    ("tokens", "integer"),
    ("content_hash", "text"),
    ("lexical_length", "integer"),
    ("lex_headings", "text"),
    ("lex_symbol", "text"),
    ("lex_body", "text"),
)
_STORED_CHUNK_COLUMNS = [name for name, _ in _CHUNK_ARRAYS if not name.startswith("lex_")]
CHUNK_INSERT_SQL = (
    f"INSERT INTO chunks (document_id, kb_id, {', '.join(_STORED_CHUNK_COLUMNS)}, lexemes) "
    f"SELECT %(document_id)s, %(kb_id)s, {', '.join('r.' + c for c in _STORED_CHUNK_COLUMNS)}, "
    + lexical.lexemes_sql(
        "%(lex_title)s", "r.lex_headings", "r.lex_symbol", "%(lex_path)s || ' ' || r.lex_body"
    )
    + " FROM unnest("
    + ", ".join(f"%({name})s::{kind}[]" for name, kind in _CHUNK_ARRAYS)
    + f") AS r({', '.join(name for name, _ in _CHUNK_ARRAYS)})"
)


def load_kb(conn: Any, column: str, value: object, *, totals: bool = True) -> KnowledgeBase:
    row = conn.execute(
        f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {column} = %s", (value,)
    ).fetchone()
    if row is None:
        raise NotFound(NO_KB)
    if not totals:
        return kb_from_row(row, None)
    counted = conn.execute(f"{KB_TOTALS_SQL} WHERE kb_id = %s GROUP BY kb_id", (row[0],))
    found = counted.fetchone()
    return kb_from_row(row, None if found is None else found[1:])


def lock_kb(conn: Any, kb_id: int) -> None:
    """The base's row, share-locked for the transaction (first in the lock order); ``NotFound``
    when there is no such base."""
    found = conn.execute(
        "SELECT 1 FROM knowledge_bases WHERE id = %s FOR KEY SHARE", (kb_id,)
    ).fetchone()
    if found is None:
        raise NotFound(NO_KB)


def require_kb(conn: Any, kb_id: int) -> None:
    if conn.execute("SELECT 1 FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone() is None:
        raise NotFound(NO_KB)


def require_source(conn: Any, kb_id: int, source_id: int | None) -> None:
    """``SourceRemoved`` when a document's source is no longer followed by its base (a folder
    removed while a pass read it, its row share-locked: a removal waits for this write)."""
    if source_id is None:
        return
    sql = "SELECT 1 FROM sources WHERE id = %s AND kb_id = %s FOR KEY SHARE"
    if conn.execute(sql, (source_id, kb_id)).fetchone() is None:
        raise SourceRemoved(SOURCE_REMOVED)


def followed_sources(conn: Any, kb_id: int) -> set[int]:
    """The ids of the sources a base follows now."""
    rows = conn.execute("SELECT id FROM sources WHERE kb_id = %s", (kb_id,)).fetchall()
    return {int(row[0]) for row in rows}


def require_identity(conn: Any, kb_id: int, identity_key: str) -> None:
    """``Conflict`` when the base takes no vectors of this identity (see
    :func:`~lorebase.store.records.refuses_vectors`); its row share-locked for the
    transaction, so a switch waits for this write (and then sees its document)."""
    row = conn.execute(
        f"SELECT {KB_EMBEDDING_COLUMNS} FROM knowledge_bases WHERE id = %s FOR SHARE", (kb_id,)
    ).fetchone()
    if row is None:
        raise NotFound(NO_KB)
    if refuses_vectors(row, identity_key):
        raise Conflict(MOVED)


def load_document(conn: Any, kb_id: int, document_id: str, *, lock: bool = False) -> DocumentRecord:
    row = conn.execute(
        f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = %s AND kb_id = %s"
        + (" FOR UPDATE" if lock else ""),
        (document_id, kb_id),
    ).fetchone()
    if row is None:
        raise NotFound(NO_DOCUMENT)
    return document_from_row(row)


def upsert_document(
    conn: Any,
    kb_id: int,
    document: NewDocument,
    *,
    state: DocumentState,
    reason: str | None,
    chunk_count: int,
    lexical_tokens: int,
    identity_key: str | None,
    settings_key: str | None,
    text: bytes | None,
    new_document_id: str | None = None,
    insert_only: bool = False,
) -> str:
    """Write the document row for ``document.path`` and return its id: an existing row (locked
    first) keeps its id and loses its chunks; a new row gets ``new_document_id`` (or a fresh
    one). Two transactions writing one new path at once: the second waits for the first, then
    updates the row the first made. ``insert_only``: a new row or a unique violation."""
    if not document.path:
        raise InvalidInput("a document needs a path")
    require_source(conn, kb_id, document.source_id)
    now = time.time()
    columns = (
        *DOCUMENT_VALUE_COLUMNS,
        "state",
        "reason",
        "chunk_count",
        "lexical_tokens",
        "identity_key",
        "settings_key",
    )
    values = (
        *text_values(document_values(document)),
        str(state),
        reason,
        chunk_count,
        lexical_tokens,
        identity_key,
        settings_key,
    )
    document_id = None if insert_only else _locked_path(conn, kb_id, document.path)
    if document_id is None:
        inserted = conn.execute(
            f"INSERT INTO documents (id, kb_id, path, {', '.join(columns)}, created_at, "
            f"updated_at) VALUES ({', '.join(['%s'] * (len(columns) + 5))}) "
            + ("" if insert_only else "ON CONFLICT (kb_id, path) DO NOTHING ")
            + "RETURNING id",
            (new_document_id or new_id(), kb_id, document.path, *values, now, now),
        ).fetchone()
        if inserted is not None:
            write_text(conn, str(inserted[0]), text)
            return str(inserted[0])
        document_id = _locked_path(conn, kb_id, document.path)  # made meanwhile, committed
        if document_id is None:
            raise Conflict("the document changed while it was written; try again")
    purge_chunks(conn, document_id)
    assignments = ", ".join(f"{column} = %s" for column in columns)
    conn.execute(
        f"UPDATE documents SET {assignments}, updated_at = %s WHERE id = %s",
        (*values, now, document_id),
    )
    write_text(conn, document_id, text)
    return document_id


def _locked_path(conn: Any, kb_id: int, path: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM documents WHERE kb_id = %s AND path = %s FOR UPDATE", (kb_id, path)
    ).fetchone()
    return None if row is None else str(row[0])


def write_text(conn: Any, document_id: str, text: bytes | None) -> None:
    """The document's (compressed) extracted text, or none: it has no text now."""
    if text is None:
        conn.execute("DELETE FROM document_texts WHERE document_id = %s", (document_id,))
    else:
        conn.execute(
            "INSERT INTO document_texts (document_id, text) VALUES (%s, %s) "
            "ON CONFLICT (document_id) DO UPDATE SET text = excluded.text",
            (document_id, text),
        )


def purge_chunks(conn: Any, document_id: str) -> None:
    """Delete a document's chunks (their vectors cascade) and sections."""
    conn.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
    conn.execute("DELETE FROM sections WHERE document_id = %s", (document_id,))


def delete_documents(conn: Any, kb_id: int, document_ids: Sequence[str]) -> list[str]:
    """Delete those of the documents that are in this base, with every row that belongs to
    them (by cascade); returns the ids deleted. Rows are locked in id order first."""
    rows = conn.execute(
        "SELECT id FROM documents WHERE kb_id = %s AND id = ANY(%s) ORDER BY id FOR UPDATE",
        (kb_id, sorted(set(document_ids))),
    ).fetchall()
    ids = [str(row[0]) for row in rows]
    if ids:
        conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (ids,))
    return ids


def write_chunks(
    conn: Any, kb_id: int, document_id: str, document: NewDocument, chunks: Sequence[Chunk]
) -> tuple[list[str], int]:
    """Sections (runs of chunks sharing a trail), then the chunks with their lexemes, one
    statement each. Returns the stored chunk ids, in chunk order, and the lexical tokens of
    them all."""
    stored_ids = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
    if not chunks:
        return stored_ids, 0
    runs = sections_of(chunks)
    section_rows = conn.execute(
        "INSERT INTO sections (document_id, ordinal, trail, headings) "
        "SELECT %s, s.ordinal, s.trail, s.headings "
        "FROM unnest(%s::integer[], %s::text[], %s::text[]) AS s(ordinal, trail, headings) "
        "RETURNING ordinal, id",
        (
            document_id,
            list(range(len(runs))),
            [_text(trail_json(trail)) for trail, _ in runs],
            [_text(headings_text(trail)) for trail, _ in runs],
        ),
    ).fetchall()
    section_of_run = dict(section_rows)
    title = lexical.lexical_text(document.title or "")
    path = lexical.lexical_text(document.path)
    columns: dict[str, list[Any]] = {name: [] for name, _ in _CHUNK_ARRAYS}
    total = 0
    for run, (trail, positions) in enumerate(runs):
        headings = headings_text(trail)
        for position in positions:
            chunk = chunks[position]
            where = chunk.position
            fields = lexical.lexical_fields(
                document.title or "", headings, document.path, where.symbol or "", chunk.text
            )
            total += fields.length
            for name, value in (
                ("id", stored_ids[position]),
                ("section_id", section_of_run[run]),
                ("ordinal", chunk.ordinal),
                ("text", _text(chunk.text)),
                ("trail", _text(trail_json(where.trail))),
                ("start_offset", where.start),
                ("end_offset", where.end),
                ("line", where.line),
                ("page", where.page),
                ("page_end", where.page_end),
                ("content_kind", str(where.content_kind)),
                ("language", where.language),
                ("symbol", None if where.symbol is None else _text(where.symbol)),
                ("tokens", chunk.tokens),
                ("content_hash", chunk.content_hash),
                ("lexical_length", fields.length),
                ("lex_headings", fields.headings),
                ("lex_symbol", fields.symbol),
                ("lex_body", fields.body),
            ):
                columns[name].append(value)
    conn.execute(
        CHUNK_INSERT_SQL,
        {
            **columns,
            "document_id": document_id,
            "kb_id": kb_id,
            "lex_title": title,
            "lex_path": path,
        },
    )
    return stored_ids, total


def write_vectors(
    conn: Any,
    kb_id: int,
    document_id: str,
    chunks: Sequence[Chunk],
    stored_ids: Sequence[str],
    matrix: np.ndarray,
    identity_id: int,
) -> None:
    """One vector per chunk (replacing one it had under this identity), and the vectors the
    reuse cache lacks, in content-hash order. A content hash already cached keeps its vector:
    a hash names the text embedded, so an identity's vector for it is the same."""
    seq_of = dict(conn.execute("SELECT id, seq FROM chunks WHERE document_id = %s", (document_id,)))
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO vectors (chunk_seq, identity_id, kb_id, content_hash, vector) "
            "VALUES (%s, %s, %s, %s, %s::vector::halfvec) ON CONFLICT (chunk_seq, identity_id) "
            "DO UPDATE SET vector = excluded.vector, content_hash = excluded.content_hash",
            [
                (seq_of[sid], identity_id, kb_id, chunk.content_hash, row)
                for sid, chunk, row in zip(stored_ids, chunks, matrix, strict=True)
            ],
        )
    cache_vectors(
        conn, identity_id, dict(zip((c.content_hash for c in chunks), matrix, strict=True))
    )


def cache_vectors(conn: Any, identity_id: int, vectors: Mapping[str, np.ndarray]) -> None:
    """The vectors the reuse cache lacks, in content-hash order: every writer takes the rows'
    locks in one order, so two transactions caching the same texts never deadlock. A content
    hash already cached keeps its vector (a hash names the text embedded)."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO embedding_cache (content_hash, identity_id, vector) "
            "VALUES (%s, %s, %s) ON CONFLICT (content_hash, identity_id) DO NOTHING",
            [
                (content_hash, identity_id, vectors[content_hash])
                for content_hash in sorted(vectors)
            ],
        )


def _text(value: str) -> str:
    """PostgreSQL text cannot hold NUL: it becomes U+FFFD (one character for one, so offsets
    into the document's text, kept compressed as bytes, still hold)."""
    return value.replace("\x00", "\ufffd")


def text_values(values: Sequence[object]) -> tuple[object, ...]:
    """Values with every string made fit for PostgreSQL text (see :func:`_text`)."""
    return tuple(_text(value) if isinstance(value, str) else value for value in values)
