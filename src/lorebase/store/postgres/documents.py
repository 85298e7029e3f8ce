"""The PostgreSQL document records and their life cycle (and the counts for metrics)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import NotFound
from lorebase.store.base import DocumentRecord, DocumentState, NewDocument, new_document_id
from lorebase.store.postgres import writes
from lorebase.store.postgres.role import PostgresRole
from lorebase.store.records import (
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    check_awaiting,
    check_chunks,
    compress_text,
    document_from_row,
    document_values,
)
from lorebase.store.vectors import checked_vectors
from lorebase.types import Chunk

UNFINISHED = (DocumentState.EXTRACTING, DocumentState.CHUNKING, DocumentState.EMBEDDING)


class DocumentsMixin(PostgresRole):
    """:class:`~lorebase.store.base.Documents` over PostgreSQL."""

    # -- reads -------------------------------------------------------------------------------
    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = %s AND path = %s",
                (kb_id, path),
            ).fetchone()
        return document_from_row(row) if row else None

    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        with self._read() as conn:
            return writes.load_document(conn, kb_id, document_id)

    def find_document(self, document_id: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = %s", (document_id,)
            ).fetchone()
        return document_from_row(row) if row else None

    def find_document_ids(self, prefix: str, limit: int = 2) -> list[str]:
        with self._read() as conn:  # a range over the primary key (ids are ASCII, collation C)
            rows = conn.execute(
                "SELECT id FROM documents WHERE id >= %s AND id < %s ORDER BY id LIMIT %s",
                (prefix, prefix + "\x7f", max(0, limit)),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = %s"
        params: list[object] = [kb_id]
        if state is not None:
            sql += " AND state = %s"
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
        """One transaction: lock the base (shared) and the document's row, drop its chunks
        (vectors cascade) and sections, update or insert the row, write sections, chunks
        with their lexemes, vectors and the reuse cache. Input is checked, and a new identity
        registered, before it starts."""
        matrix = checked_vectors(chunks, vectors, identity)
        check_awaiting(matrix, awaiting_vectors)
        check_chunks(chunks)
        with self._read() as conn:
            writes.require_kb(conn, kb_id)
        identity_id = (
            self._identity_id(identity) if matrix is not None and identity is not None else None
        )
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            if identity_id is not None and identity is not None:
                writes.require_identity(conn, kb_id, identity.key)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.EMBEDDING if awaiting_vectors else DocumentState.INDEXED,
                reason=None,
                chunk_count=len(chunks),
                lexical_tokens=0,
                identity_key=identity.key if identity_id is not None and identity else None,
                settings_key=settings_key,
                text=compress_text(document.text),
            )
            stored_ids, lexical_tokens = writes.write_chunks(
                conn, kb_id, document_id, document, chunks
            )
            conn.execute(
                "UPDATE documents SET lexical_tokens = %s WHERE id = %s",
                (lexical_tokens, document_id),
            )
            if matrix is not None and identity_id is not None:
                writes.write_vectors(
                    conn, kb_id, document_id, chunks, stored_ids, matrix, identity_id
                )
            return writes.load_document(conn, kb_id, document_id)

    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.FAILED,
                reason=reason,
                chunk_count=0,
                lexical_tokens=0,
                identity_key=None,
                settings_key=None,
                text=None,
            )
            return writes.load_document(conn, kb_id, document_id)

    # -- the life cycle ----------------------------------------------------------------------
    def mark_pending(self, kb_id: int, documents: Sequence[NewDocument]) -> None:
        """One upsert per path, in path order: a row that exists only changes state."""
        if not documents:
            return
        now = time.time()
        columns = ", ".join(DOCUMENT_VALUE_COLUMNS)
        by_path = {document.path: document for document in documents}
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            followed = writes.followed_sources(conn, kb_id)
            by_path = {  # a document of a folder removed meanwhile is not recorded
                path: document
                for path, document in by_path.items()
                if document.source_id is None or document.source_id in followed
            }
            if not by_path:
                return
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO documents (id, kb_id, path, {columns}, state, created_at, "
                    f"updated_at) VALUES ({', '.join(['%s'] * (len(DOCUMENT_VALUE_COLUMNS) + 6))}) "
                    "ON CONFLICT (kb_id, path) DO UPDATE SET state = excluded.state, "
                    "updated_at = excluded.updated_at",
                    [
                        (
                            new_document_id(),
                            kb_id,
                            path,
                            *writes.text_values(document_values(by_path[path])),
                            str(DocumentState.PENDING),
                            now,
                            now,
                        )
                        for path in sorted(by_path)
                    ],
                )

    def set_document_state(self, kb_id: int, path: str, state: DocumentState) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET state = %s, updated_at = %s WHERE kb_id = %s AND path = %s",
                (str(DocumentState(state)), time.time(), kb_id, path),
            )

    def touch_document(self, kb_id: int, document_id: str, mtime: float | None) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET mtime = %s WHERE id = %s AND kb_id = %s",
                (mtime, document_id, kb_id),
            )

    def delete_document(self, kb_id: int, document_id: str) -> None:
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            if not writes.delete_documents(conn, kb_id, [document_id]):
                raise NotFound(writes.NO_DOCUMENT)

    def delete_documents(self, kb_id: int, document_ids: Sequence[str]) -> None:
        if not document_ids:
            return
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            writes.delete_documents(conn, kb_id, document_ids)

    def reset_unfinished(self, *, uploads: bool = True) -> int:
        folders_only = "" if uploads else " AND display_name IS NULL"
        with self._write() as conn:
            updated: int = conn.execute(
                "UPDATE documents SET state = %s WHERE state = ANY(%s)" + folders_only,
                (str(DocumentState.PENDING), [str(s) for s in UNFINISHED]),
            ).rowcount
            return updated


class MetricsMixin(PostgresRole):
    """:class:`~lorebase.store.base.Metrics` over PostgreSQL."""

    def count_documents_by_state(self) -> dict[DocumentState, int]:
        counts = dict.fromkeys(DocumentState, 0)
        with self._read() as conn:
            for state, count in conn.execute(
                "SELECT state, count(*) FROM documents GROUP BY state"
            ):
                counts[DocumentState(state)] = int(count)
        return counts
