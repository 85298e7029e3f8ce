"""PostgreSQL's half of the write path, as functions over a connection in a transaction:
what the relational roles (:mod:`lorebase.store.relational`) leave to PostgreSQL — chunks
with their lexemes in one ``INSERT ... unnest``, half-precision vectors, the reuse cache.

Locks follow the order of :mod:`lorebase.store.relational.rows` (the base's row, then
document rows, then their chunks), then reuse cache rows in content-hash order. Nothing that
every writer of a base would update (a counter, a generation) lives in a shared row: the
PostgreSQL store keeps no in-memory index to refresh.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from lorebase.store.base import NewDocument
from lorebase.store.postgres import lexical
from lorebase.store.records import sections_of, trail_json
from lorebase.store.relational.role import DocumentChunks
from lorebase.store.relational.rows import text
from lorebase.store.terms import headings_text

UPLOAD_LOCK = 0x6C62_7570  # "lbup": one upload of given bytes per base at a time

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


def write_chunks(conn: Any, written: DocumentChunks, document: NewDocument) -> int:
    """Sections (runs of chunks sharing a trail), then the chunks with their lexemes, one
    statement each. Returns the lexical tokens of them all."""
    document_id, chunks = written.document_id, written.chunks
    if not chunks:
        return 0
    runs = sections_of(chunks)
    section_rows = conn.execute(
        "INSERT INTO sections (document_id, ordinal, trail, headings) "
        "SELECT %s, s.ordinal, s.trail, s.headings "
        "FROM unnest(%s::integer[], %s::text[], %s::text[]) AS s(ordinal, trail, headings) "
        "RETURNING ordinal, id",
        (
            document_id,
            list(range(len(runs))),
            [text(trail_json(trail)) for trail, _ in runs],
            [text(headings_text(trail)) for trail, _ in runs],
        ),
    ).fetchall()
    section_of_run = dict(section_rows)
    # The document's title and path are read in the language most of its chunks are in.
    languages = Counter(chunk.position.language for chunk in chunks)
    main = languages.most_common(1)[0][0] if languages else None
    title = lexical.lexical_text(document.title or "", main)
    path = lexical.lexical_text(document.path, main)
    columns: dict[str, list[Any]] = {name: [] for name, _ in _CHUNK_ARRAYS}
    total = 0
    for run, (trail, positions) in enumerate(runs):
        headings = headings_text(trail)
        for position in positions:
            chunk = chunks[position]
            where = chunk.position
            fields = lexical.lexical_fields(
                document.title or "",
                headings,
                document.path,
                where.symbol or "",
                chunk.text,
                where.language,
                main,
            )
            total += fields.length
            for name, value in (
                ("id", written.stored_ids[position]),
                ("section_id", section_of_run[run]),
                ("ordinal", chunk.ordinal),
                ("text", text(chunk.text)),
                ("trail", text(trail_json(where.trail))),
                ("start_offset", where.start),
                ("end_offset", where.end),
                ("line", where.line),
                ("page", where.page),
                ("page_end", where.page_end),
                ("content_kind", str(where.content_kind)),
                ("language", where.language),
                ("symbol", None if where.symbol is None else text(where.symbol)),
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
            "kb_id": written.kb_id,
            "lex_title": title,
            "lex_path": path,
        },
    )
    return total


def write_vectors(conn: Any, written: DocumentChunks, matrix: np.ndarray, identity_id: int) -> None:
    """One vector per chunk (replacing one it had under this identity), and the vectors the
    reuse cache lacks, in content-hash order. A content hash already cached keeps its vector:
    a hash names the text embedded, so an identity's vector for it is the same."""
    kb_id, chunks = written.kb_id, written.chunks
    seq_of = dict(
        conn.execute("SELECT id, seq FROM chunks WHERE document_id = %s", (written.document_id,))
    )
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO vectors (chunk_seq, identity_id, kb_id, content_hash, vector) "
            "VALUES (%s, %s, %s, %s, %s::vector::halfvec) ON CONFLICT (chunk_seq, identity_id) "
            "DO UPDATE SET vector = excluded.vector, content_hash = excluded.content_hash",
            [
                (seq_of[sid], identity_id, kb_id, chunk.content_hash, row)
                for sid, chunk, row in zip(written.stored_ids, chunks, matrix, strict=True)
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
