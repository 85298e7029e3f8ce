"""Document records and their life cycle (and the counts for metrics), written once.

State writes that change no searchable row (document states, modification times) are not
announced to the indexes beside the rows, so a search during a pass does not reload them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.errors import NotFound
from lorebase.store import stored_chunk_id
from lorebase.store.base import DocumentRecord, NewDocument, RunningVersions, new_document_id
from lorebase.store.document_text import spans_of, stored_text
from lorebase.store.records import (
    DOCUMENT_COLUMNS,
    DOCUMENT_VALUE_COLUMNS,
    check_awaiting,
    check_chunks,
    document_from_row,
    document_values,
    stale_sql,
)
from lorebase.store.relational import rows
from lorebase.store.relational.role import DocumentChunks, RelationalRole
from lorebase.store.states import DocumentState
from lorebase.store.vectors import checked_vectors
from lorebase.types import Chunk, EmbedderIdentity

UNFINISHED = (DocumentState.EXTRACTING, DocumentState.CHUNKING, DocumentState.EMBEDDING)


class DocumentsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Documents` over a relational database."""

    # -- reads -------------------------------------------------------------------------------
    def get_document(self, kb_id: int, path: str) -> DocumentRecord | None:
        with self._reading() as tx:
            row = tx.one(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND path = ?",
                (kb_id, path),
            )
        return document_from_row(row) if row else None

    def get_document_by_id(self, kb_id: int, document_id: str) -> DocumentRecord:
        with self._reading() as tx:
            return rows.load_document(tx, kb_id, document_id)

    def find_document(self, document_id: str) -> DocumentRecord | None:
        with self._reading() as tx:
            row = tx.one(f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?", (document_id,))
        return document_from_row(row) if row else None

    def find_document_ids(self, prefix: str, limit: int = 2) -> list[str]:
        with self._reading() as tx:  # a range over the primary key (ids are ASCII, collation C)
            found = tx.all(
                "SELECT id FROM documents WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (prefix, prefix + "\x7f", max(0, limit)),
            )
        return [str(row[0]) for row in found]

    def parts_of(self, kb_id: int, container: str) -> list[DocumentRecord]:
        with self._reading() as tx:
            found = tx.all(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND container = ? "
                "ORDER BY path",
                (kb_id, container),
            )
        return [document_from_row(row) for row in found]

    def count_stale(
        self, running: RunningVersions, kb_ids: Sequence[int] | None = None
    ) -> dict[int, int]:
        stale, params = stale_sql(running)
        sql = f"SELECT kb_id, count(*) FROM documents WHERE {stale}"
        with self._reading() as tx:
            if kb_ids is not None:
                sql += f" AND {tx.dialect.any_of('kb_id')}"
                params.append(tx.dialect.ids(list(kb_ids)))
            found = tx.all(sql + " GROUP BY kb_id", params)
        return {int(kb_id): int(count) for kb_id, count in found}

    def list_stale(
        self, running: RunningVersions, limit: int, kb_ids: Sequence[int] | None = None
    ) -> list[DocumentRecord]:
        stale, params = stale_sql(running)
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE {stale}"
        with self._reading() as tx:
            if kb_ids is not None:
                sql += f" AND {tx.dialect.any_of('kb_id')}"
                params.append(tx.dialect.ids(list(kb_ids)))
            found = tx.all(sql + " ORDER BY kb_id, path LIMIT ?", [*params, max(0, limit)])
        return [document_from_row(row) for row in found]

    def list_documents(
        self, kb_id: int, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        sql = f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ?"
        params: list[object] = [kb_id]
        if state is not None:
            sql += " AND state = ?"
            params.append(str(DocumentState(state)))
        with self._reading() as tx:
            found = tx.all(sql + " ORDER BY path", params)
        return [document_from_row(row) for row in found]

    # -- indexed or failed -------------------------------------------------------------------
    def replace_document(
        self,
        kb_id: int,
        document: NewDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        settings_key: str | None = None,
        *,
        awaiting_vectors: bool = False,
    ) -> DocumentRecord:
        """One transaction: lock the base (shared, where rows lock) and the document's row,
        drop its index rows, chunks (vectors cascade) and sections, update or insert the row,
        write sections, chunks (with their lexical rows), vectors; tell the indexes beside the
        rows. Input is checked, and a new identity registered, before it starts."""
        matrix = checked_vectors(chunks, vectors, identity)
        check_awaiting(matrix, awaiting_vectors)
        check_chunks(chunks)
        with self._reading() as tx:
            rows.require_kb(tx, kb_id)
        embedded = matrix is not None and identity is not None
        identity_id = self._identity_id(identity) if embedded and identity else None
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            if identity_id is not None and identity is not None:
                rows.require_identity(tx, kb_id, identity.key)
            document_id = rows.upsert_document(
                tx,
                kb_id,
                document,
                state=DocumentState.EMBEDDING if awaiting_vectors else DocumentState.INDEXED,
                reason=None,
                chunk_count=len(chunks),
                identity_key=identity.key if identity_id is not None and identity else None,
                settings_key=settings_key,
                text=stored_text(document.text, spans_of(chunks)),
                purge=self._purge,
                extra=self._document_extra,
            )
            stored_ids = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
            written = DocumentChunks(kb_id, document_id, chunks, stored_ids)
            self._write_chunks(tx, written, document)
            rows.record_languages(tx, kb_id, chunks)
            if matrix is not None and identity_id is not None:
                self._write_vectors(tx, written, matrix, identity_id)
            self._changed(tx, kb_id, [document_id])
            return rows.load_document(tx, kb_id, document_id)

    def record_failure(self, kb_id: int, document: NewDocument, reason: str) -> DocumentRecord:
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            document_id = rows.upsert_document(
                tx,
                kb_id,
                document,
                state=DocumentState.FAILED,
                reason=reason,
                chunk_count=0,
                identity_key=None,
                settings_key=None,
                text=None,
                purge=self._purge,
                extra=self._document_extra,
            )
            self._changed(tx, kb_id, [document_id])
            return rows.load_document(tx, kb_id, document_id)

    # -- the life cycle ----------------------------------------------------------------------
    def mark_pending(self, kb_id: int, documents: Sequence[NewDocument]) -> None:
        """One upsert per path, in path order: a row that exists only changes state."""
        if not documents:
            return
        now = time.time()
        columns = ", ".join(DOCUMENT_VALUE_COLUMNS)
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            followed = rows.followed_sources(tx, kb_id)
            by_path = {  # a document of a folder removed meanwhile is not recorded
                document.path: document
                for document in documents
                if document.source_id is None or document.source_id in followed
            }
            tx.many(
                f"INSERT INTO documents (id, kb_id, path, {columns}, state, created_at, "
                f"updated_at) VALUES ({', '.join(['?'] * (len(DOCUMENT_VALUE_COLUMNS) + 6))}) "
                "ON CONFLICT (kb_id, path) DO UPDATE SET state = excluded.state, "
                "updated_at = excluded.updated_at",
                [
                    (
                        new_document_id(),
                        kb_id,
                        path,
                        *rows.text_values(tx, document_values(by_path[path])),
                        str(DocumentState.PENDING),
                        now,
                        now,
                    )
                    for path in sorted(by_path)
                ],
            )

    def set_document_state(self, kb_id: int, path: str, state: DocumentState) -> None:
        with self._writing() as tx:
            tx.execute(
                "UPDATE documents SET state = ?, updated_at = ? WHERE kb_id = ? AND path = ?",
                (str(DocumentState(state)), time.time(), kb_id, path),
            )

    def touch_document(self, kb_id: int, document_id: str, mtime: float | None) -> None:
        with self._writing() as tx:
            tx.execute(
                "UPDATE documents SET mtime = ? WHERE id = ? AND kb_id = ?",
                (mtime, document_id, kb_id),
            )

    def delete_document(self, kb_id: int, document_id: str) -> None:
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            if not self._delete_documents(tx, kb_id, [document_id]):
                raise NotFound(rows.NO_DOCUMENT)
            self._changed(tx, kb_id)

    def delete_documents(self, kb_id: int, document_ids: Sequence[str]) -> None:
        if not document_ids:
            return
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            self._delete_documents(tx, kb_id, document_ids)
            self._changed(tx, kb_id)

    def reset_unfinished(self, *, uploads: bool = True) -> int:
        folders_only = "" if uploads else " AND display_name IS NULL"
        with self._writing() as tx:
            updated: int = tx.execute(
                f"UPDATE documents SET state = ? WHERE {tx.dialect.any_of('state')}" + folders_only,
                (str(DocumentState.PENDING), tx.dialect.ids([str(s) for s in UNFINISHED])),
            ).rowcount
            return updated


class MetricsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Metrics` over a relational database."""

    def count_documents_by_state(self) -> dict[DocumentState, int]:
        counts = dict.fromkeys(DocumentState, 0)
        with self._reading() as tx:
            for state, count in tx.all("SELECT state, count(*) FROM documents GROUP BY state"):
                counts[DocumentState(state)] = int(count)
        return counts
