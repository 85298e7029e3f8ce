"""The SQLite half of the write path, as functions over a :class:`Bound` connection in a
transaction: what the relational roles leave to SQLite (its sections, chunks and FTS5 rows;
its vectors keyed by chunk row; the generation that tells the in-memory indexes what changed).

A chunk's text is written as :func:`~lorebase.store.document_text.stored_chunk_text` keeps it
(zlib-compressed when that is smaller): the one place the SQLite store writes chunk rows.

The FTS5 index is external-content, so its rows are deleted with the values they were built
from, read through the index's source view, *before* the chunks, sections or document title
behind it change (the relational roles call ``_purging`` first).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.store import stored_chunk_id
from lorebase.store.document_text import stored_chunk_text
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import DocumentChunks
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.rows import CHUNK_INSERT_SQL, chunk_row, sections_of, trail_json
from lorebase.store.vectors import to_blobs
from lorebase.types import Chunk


def bump(
    tx: Bound,
    kb_id: int,
    documents: Sequence[str] = (),
    *,
    every_document: bool = False,
) -> None:
    """Mark the base changed: in-memory indexes loaded at an older generation refresh. The
    ``documents`` whose chunks or vectors changed (or ``every_document``) are stamped with
    the new generation, so that a refresh re-reads those only; deleted documents need no
    stamp (a refresh sees them gone)."""
    tx.execute(
        "UPDATE knowledge_bases SET generation = generation + 1, updated_at = ? WHERE id = ?",
        (time.time(), kb_id),
    )
    stamp = (
        "UPDATE documents SET generation = (SELECT generation FROM knowledge_bases WHERE id = ?)"
    )
    if every_document:
        tx.execute(f"{stamp} WHERE kb_id = ?", (kb_id, kb_id))
    elif documents:
        tx.many(f"{stamp} WHERE id = ?", [(kb_id, doc) for doc in documents])


def touch(tx: Bound, kb_id: int) -> None:
    """Mark the base changed where its searchable rows did not (fields people set): its last
    change moves forward, strictly, even within one tick of the clock."""
    tx.execute(
        "UPDATE knowledge_bases SET updated_at = max(updated_at + 0.000001, ?) WHERE id = ?",
        (time.time(), kb_id),
    )


def write_chunks(
    tx: Bound, kb_id: int, document_id: str, chunks: Sequence[Chunk], *, lexical: bool = True
) -> list[str]:
    """Sections (runs of chunks sharing a trail), chunks, then their index rows (unless
    ``lexical`` is false: a bulk loader rebuilds the index once at the end). Returns the
    stored chunk ids, in chunk order."""
    stored_ids = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
    rows = []
    for ordinal, (trail, positions) in enumerate(sections_of(chunks)):
        section_id = tx.one(
            "INSERT INTO sections (document_id, ordinal, trail, headings) VALUES (?, ?, ?, ?) "
            "RETURNING id",
            (document_id, ordinal, trail_json(trail), fts.headings_text(trail)),
        )[0]
        for position in positions:
            row = chunk_row(
                chunks[position],
                stored_id=stored_ids[position],
                document_id=document_id,
                kb_id=kb_id,
                section_id=section_id,
            )
            rows.append(row | {"text": stored_chunk_text(row["text"])})
    tx.raw.executemany(CHUNK_INSERT_SQL, rows)  # named parameters: SQLite's own statement
    if lexical and fts.fts_present(tx.raw):
        tx.execute(fts.fts_insert_sql("document_id"), (document_id,))
    return stored_ids


def write_vectors(tx: Bound, written: DocumentChunks, matrix: np.ndarray, identity_id: int) -> None:
    """One vector per chunk (replacing one it had under this identity), stored once: the
    reuse lookup (``cached_vectors``) finds it by the chunk's content hash."""
    rowid_of = dict(
        tx.all("SELECT id, rowid FROM chunks WHERE document_id = ?", (written.document_id,))
    )
    tx.many(
        "INSERT OR REPLACE INTO vectors (chunk_rowid, identity_id, vector) VALUES (?, ?, ?)",
        [
            (rowid_of[sid], identity_id, blob)
            for sid, blob in zip(written.stored_ids, to_blobs(matrix), strict=True)
        ],
    )
