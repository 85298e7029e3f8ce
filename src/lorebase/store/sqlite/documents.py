"""The SQLite document records and their life cycle (and the counts for metrics).

State writes that change no searchable row (document states, modification times) do not bump
the base's generation, so a search during a pass does not reload its vector matrix.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.store.base import DocumentRecord, DocumentState, NewDocument, new_document_id
from lorebase.store.records import check_awaiting
from lorebase.store.sqlite import writes
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.rows import (
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    compress_text,
    document_from_row,
    document_values,
    placeholders,
)
from lorebase.types import Chunk

UNFINISHED = (DocumentState.EXTRACTING, DocumentState.CHUNKING, DocumentState.EMBEDDING)


class DocumentsMixin(SqliteRole):
    """:class:`~lorebase.store.base.Documents` over SQLite."""

    # -- reads -------------------------------------------------------------------------------
    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND path = ?",
                (kb_id, path),
            ).fetchone()
        return document_from_row(row) if row else None

    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        with self._read() as conn:
            return writes.load_document(conn, kb_id, document_id)

    def find_document(self, document_id: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?", (document_id,)
            ).fetchone()
        return document_from_row(row) if row else None

    def find_document_ids(self, prefix: str, limit: int = 2) -> list[str]:
        with self._read() as conn:  # a range over the primary key (ids are ASCII)
            rows = conn.execute(
                "SELECT id FROM documents WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (prefix, prefix + "\x7f", limit),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ?"
        params: list[object] = [kb_id]
        if state is not None:
            sql += " AND state = ?"
            params.append(str(DocumentState(state)))
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY path", params).fetchall()
        return [document_from_row(row) for row in rows]

    # -- indexed or failed -------------------------------------------------------------------
    def replace_document(
        self,
        kb_id: int,
        document: NewDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        settings_key: str,
        *,
        awaiting_vectors: bool = False,
    ) -> DocumentRecord:
        """Everything happens in one transaction, in this order: drop the old index rows,
        chunks (vectors cascade) and sections; update or insert the document row; write
        sections, chunks and index rows; write vectors (stored once); bump the base's
        generation. Input is checked before the transaction starts."""
        matrix = writes.checked_vectors(chunks, vectors, identity)
        check_awaiting(matrix, awaiting_vectors)
        writes.check_chunks(chunks)
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            if matrix is not None and identity is not None:
                writes.require_identity(conn, kb_id, identity)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.EMBEDDING if awaiting_vectors else DocumentState.INDEXED,
                reason=None,
                chunk_count=len(chunks),
                identity_key=identity.key if matrix is not None and identity else None,
                settings_key=settings_key,
                text=compress_text(document.text),
            )
            stored_ids = writes.write_chunks(conn, kb_id, document_id, chunks)
            if matrix is not None and identity is not None:
                writes.write_vectors(conn, document_id, chunks, stored_ids, matrix, identity)
            writes.bump(conn, kb_id, [document_id])
            return writes.load_document(conn, kb_id, document_id)

    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.FAILED,
                reason=reason,
                chunk_count=0,
                identity_key=None,
                settings_key=None,
                text=None,
            )
            writes.bump(conn, kb_id, [document_id])
            return writes.load_document(conn, kb_id, document_id)

    # -- the life cycle ----------------------------------------------------------------------
    def mark_pending(self, kb_id: int, documents: Sequence[NewDocument]) -> None:
        if not documents:
            return
        now = time.time()
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            followed = writes.followed_sources(conn, kb_id)
            for document in documents:
                if document.source_id is not None and document.source_id not in followed:
                    continue  # its folder was removed meanwhile
                updated = conn.execute(
                    "UPDATE documents SET state = ?, updated_at = ? WHERE kb_id = ? AND path = ?",
                    (str(DocumentState.PENDING), now, kb_id, document.path),
                ).rowcount
                if not updated:
                    columns = ", ".join(DOCUMENT_VALUE_COLUMNS)
                    conn.execute(
                        f"INSERT INTO documents (id, kb_id, path, {columns}, state, created_at, "
                        f"updated_at) VALUES ({placeholders(len(DOCUMENT_VALUE_COLUMNS) + 6)})",
                        (
                            new_document_id(),
                            kb_id,
                            document.path,
                            *document_values(document),
                            str(DocumentState.PENDING),
                            now,
                            now,
                        ),
                    )

    def set_document_state(self, kb_id: int, path: str, state: DocumentState) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET state = ?, updated_at = ? WHERE kb_id = ? AND path = ?",
                (str(DocumentState(state)), time.time(), kb_id, path),
            )

    def touch_document(self, kb_id: int, document_id: str, mtime: float | None) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET mtime = ? WHERE id = ? AND kb_id = ?",
                (mtime, document_id, kb_id),
            )

    def delete_document(self, kb_id: int, document_id: str) -> None:
        with self._write() as conn:
            writes.load_document(conn, kb_id, document_id)  # NotFound when not in this base
            writes.purge_chunks(conn, document_id)
            conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            writes.bump(conn, kb_id)

    def delete_documents(self, kb_id: int, document_ids: Sequence[str]) -> None:
        if not document_ids:
            return
        with self._write() as conn:
            rows = conn.execute(
                f"SELECT id FROM documents WHERE kb_id = ? AND id IN "
                f"({placeholders(len(document_ids))})",
                (kb_id, *document_ids),
            )
            ids = [row[0] for row in rows]
            writes.delete_documents(conn, ids)
            writes.bump(conn, kb_id)

    def reset_unfinished(self, *, uploads: bool = True) -> int:
        states = [str(s) for s in UNFINISHED]
        folders_only = "" if uploads else " AND display_name IS NULL"
        with self._write() as conn:
            return conn.execute(
                f"UPDATE documents SET state = ? WHERE state IN ({placeholders(len(states))})"
                + folders_only,
                (str(DocumentState.PENDING), *states),
            ).rowcount


class MetricsMixin(SqliteRole):
    """:class:`~lorebase.store.base.Metrics` over SQLite."""

    def count_documents_by_state(self) -> dict[DocumentState, int]:
        counts = dict.fromkeys(DocumentState, 0)
        with self._read() as conn:
            for state, count in conn.execute(
                "SELECT state, count(*) FROM documents GROUP BY state"
            ):
                counts[DocumentState(state)] = count
        return counts
