"""The write half of the SQLite store, as functions over a connection in a transaction.

The order inside :func:`purge_chunks` and :func:`upsert_document` matters: the FTS5 index is
external-content, so its rows are deleted with the values they were built from, read through
the index's source view, *before* the chunks, sections or document title behind it change.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound, SourceRemoved
from lorebase.store import stored_chunk_id
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KnowledgeBase,
    NewDocument,
    new_document_id,
)
from lorebase.store.records import KB_EMBEDDING_COLUMNS, MOVED, SOURCE_REMOVED, refuses_vectors
from lorebase.store.records import check_chunks as check_chunks
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.rows import (
    CHUNK_INSERT_SQL,
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    KB_COLUMNS,
    KB_TOTALS_SQL,
    chunk_row,
    document_from_row,
    document_values,
    kb_from_row,
    placeholders,
    sections_of,
    trail_json,
)
from lorebase.store.vectors import checked_vectors as checked_vectors
from lorebase.store.vectors import to_blobs
from lorebase.types import Chunk

NO_KB = "no such knowledge base; list them to see the names"
NO_DOCUMENT = "no such document in this knowledge base; list its documents to see their ids"


def load_kb(
    conn: sqlite3.Connection, column: str, value: object, *, totals: bool = True
) -> KnowledgeBase:
    row = conn.execute(
        f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE {column} = ?", (value,)
    ).fetchone()
    if row is None:
        if column == "name":  # what the operator typed: say which one was not found
            raise NotFound(f"no knowledge base named {value!r}; list them to see the names")
        raise NotFound(NO_KB)
    if not totals:
        return kb_from_row(row, None)
    counted = conn.execute(f"{KB_TOTALS_SQL} WHERE kb_id = ?", (row[0],)).fetchone()
    return kb_from_row(row, counted[1:])


def require_kb(conn: sqlite3.Connection, kb_id: int) -> None:
    if conn.execute("SELECT 1 FROM knowledge_bases WHERE id = ?", (kb_id,)).fetchone() is None:
        raise NotFound(NO_KB)


def require_source(conn: sqlite3.Connection, kb_id: int, source_id: int | None) -> None:
    """``SourceRemoved`` when a document's source is no longer followed by its base (a folder
    removed while a pass read it)."""
    if source_id is None:
        return
    sql = "SELECT 1 FROM sources WHERE id = ? AND kb_id = ?"
    if conn.execute(sql, (source_id, kb_id)).fetchone() is None:
        raise SourceRemoved(SOURCE_REMOVED)


def followed_sources(conn: sqlite3.Connection, kb_id: int) -> set[int]:
    """The ids of the sources a base follows now."""
    rows = conn.execute("SELECT id FROM sources WHERE kb_id = ?", (kb_id,)).fetchall()
    return {int(row[0]) for row in rows}


def require_identity(conn: sqlite3.Connection, kb_id: int, identity: EmbedderIdentity) -> None:
    """``Conflict`` when the base takes no vectors of ``identity`` (see
    :func:`~lorebase.store.records.refuses_vectors`)."""
    row = conn.execute(
        f"SELECT {KB_EMBEDDING_COLUMNS} FROM knowledge_bases WHERE id = ?", (kb_id,)
    ).fetchone()
    if row is None:
        raise NotFound(NO_KB)
    if refuses_vectors(row, identity.key):
        raise Conflict(MOVED)


def require_document(conn: sqlite3.Connection, kb_id: int, document_id: str) -> None:
    found = conn.execute(
        "SELECT 1 FROM documents WHERE id = ? AND kb_id = ?", (document_id, kb_id)
    ).fetchone()
    if found is None:
        raise NotFound(NO_DOCUMENT)


def load_document(conn: sqlite3.Connection, kb_id: int, document_id: str) -> DocumentRecord:
    row = conn.execute(
        f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ? AND kb_id = ?",
        (document_id, kb_id),
    ).fetchone()
    if row is None:
        raise NotFound(NO_DOCUMENT)
    return document_from_row(row)


def bump(
    conn: sqlite3.Connection,
    kb_id: int,
    documents: Sequence[str] = (),
    *,
    every_document: bool = False,
) -> None:
    """Mark the base changed: in-memory indexes loaded at an older generation refresh. The
    ``documents`` whose chunks or vectors changed (or ``every_document``) are stamped with
    the new generation, so that a refresh re-reads those only; deleted documents need no
    stamp (a refresh sees them gone)."""
    conn.execute(
        "UPDATE knowledge_bases SET generation = generation + 1, updated_at = ? WHERE id = ?",
        (time.time(), kb_id),
    )
    stamp = (
        "UPDATE documents SET generation = (SELECT generation FROM knowledge_bases WHERE id = ?)"
    )
    if every_document:
        conn.execute(f"{stamp} WHERE kb_id = ?", (kb_id, kb_id))
    elif documents:
        conn.executemany(f"{stamp} WHERE id = ?", [(kb_id, doc) for doc in documents])


def identity_row(
    conn: sqlite3.Connection, identity: EmbedderIdentity, *, create: bool
) -> int | None:
    """The row of an identity, created on first use when ``create``."""
    row = conn.execute("SELECT id FROM identities WHERE key = ?", (identity.key,)).fetchone()
    if row is not None:
        return int(row[0])
    if not create:
        return None
    return conn.execute(
        "INSERT INTO identities (key, model, digest, transform, dim) VALUES (?, ?, ?, ?, ?)",
        (identity.key, identity.model, identity.digest, identity.transform, identity.dim),
    ).lastrowid


def upsert_document(
    conn: sqlite3.Connection,
    kb_id: int,
    document: NewDocument,
    *,
    state: DocumentState,
    reason: str | None,
    chunk_count: int,
    identity_key: str | None,
    settings_key: str | None,
    text: bytes | None,
    new_id: str | None = None,
) -> str:
    """Write the document row for ``document.path`` and return its id: an existing row
    keeps its id and loses its chunks first (before its title changes, since the index
    rows are deleted with the values they were built from); a new row gets ``new_id`` (or a
    fresh one)."""
    if not document.path:
        raise InvalidInput("a document needs a path")
    require_source(conn, kb_id, document.source_id)
    now = time.time()
    values = (
        *document_values(document),
        str(state),
        reason,
        chunk_count,
        identity_key,
        settings_key,
    )
    columns = (
        *DOCUMENT_VALUE_COLUMNS,
        "state",
        "reason",
        "chunk_count",
        "identity_key",
        "settings_key",
    )
    row = conn.execute(
        "SELECT id FROM documents WHERE kb_id = ? AND path = ?", (kb_id, document.path)
    ).fetchone()
    if row is not None:
        document_id = str(row[0])
        purge_chunks(conn, document_id)
        assignments = ", ".join(f"{column} = ?" for column in columns)
        conn.execute(
            f"UPDATE documents SET {assignments}, updated_at = ? WHERE id = ?",
            (*values, now, document_id),
        )
        write_text(conn, document_id, text)
        return document_id
    document_id = new_id or new_document_id()
    conn.execute(
        f"INSERT INTO documents (id, kb_id, path, {', '.join(columns)}, created_at, "
        f"updated_at) VALUES ({placeholders(len(columns) + 5)})",
        (document_id, kb_id, document.path, *values, now, now),
    )
    write_text(conn, document_id, text)
    return document_id


def write_text(conn: sqlite3.Connection, document_id: str, text: bytes | None) -> None:
    """The document's (compressed) extracted text, or none: it has no text now."""
    if text is None:
        conn.execute("DELETE FROM document_texts WHERE document_id = ?", (document_id,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO document_texts (document_id, text) VALUES (?, ?)",
            (document_id, text),
        )


def purge_chunks(conn: sqlite3.Connection, document_id: str) -> None:
    """Delete a document's index rows, chunks, vectors and sections (in that order)."""
    if fts.fts_present(conn):
        conn.execute(fts.fts_delete_sql("document_id"), (document_id,))
    conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
    conn.execute("DELETE FROM sections WHERE document_id = ?", (document_id,))


def delete_documents(conn: sqlite3.Connection, document_ids: Sequence[str]) -> None:
    """Delete documents and every row that belongs to them."""
    for document_id in document_ids:
        purge_chunks(conn, document_id)
        conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))


def write_chunks(
    conn: sqlite3.Connection,
    kb_id: int,
    document_id: str,
    chunks: Sequence[Chunk],
    *,
    lexical: bool = True,
) -> list[str]:
    """Sections (runs of chunks sharing a trail), chunks, then their index rows (unless
    ``lexical`` is false: a bulk loader rebuilds the index once at the end). Returns the
    stored chunk ids, in chunk order."""
    stored_ids = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
    rows = []
    for ordinal, (trail, positions) in enumerate(sections_of(chunks)):
        section_id = conn.execute(
            "INSERT INTO sections (document_id, ordinal, trail, headings) VALUES (?, ?, ?, ?)",
            (document_id, ordinal, trail_json(trail), fts.headings_text(trail)),
        ).lastrowid
        assert section_id is not None  # an INSERT always sets it
        for position in positions:
            rows.append(
                chunk_row(
                    chunks[position],
                    stored_id=stored_ids[position],
                    document_id=document_id,
                    kb_id=kb_id,
                    section_id=section_id,
                )
            )
    conn.executemany(CHUNK_INSERT_SQL, rows)
    if lexical and fts.fts_present(conn):
        conn.execute(fts.fts_insert_sql("document_id"), (document_id,))
    return stored_ids


def write_vectors(
    conn: sqlite3.Connection,
    document_id: str,
    chunks: Sequence[Chunk],
    stored_ids: Sequence[str],
    matrix: np.ndarray,
    identity: EmbedderIdentity,
) -> None:
    """One vector per chunk (replacing one it had under this identity), stored once: the
    reuse lookup (``cached_vectors``) finds it by the chunk's content hash."""
    identity_id = identity_row(conn, identity, create=True)
    rowid_of = dict(
        conn.execute("SELECT id, rowid FROM chunks WHERE document_id = ?", (document_id,))
    )
    blobs = to_blobs(matrix)
    conn.executemany(
        "INSERT OR REPLACE INTO vectors (chunk_rowid, identity_id, vector) VALUES (?, ?, ?)",
        [(rowid_of[sid], identity_id, blob) for sid, blob in zip(stored_ids, blobs, strict=True)],
    )
