"""The SQLite uploads: pending documents for uploaded files, found by hash, listed."""

from __future__ import annotations

from lorebase.errors import Conflict
from lorebase.store.base import DocumentRecord, DocumentState, NewDocument
from lorebase.store.sqlite import writes
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.rows import DOCUMENT_COLUMNS, document_from_row


class UploadsMixin(SqliteRole):
    """:class:`~lorebase.store.base.Uploads` over SQLite."""

    def create_upload(
        self, kb_id: int, document: NewDocument, document_id: str | None = None
    ) -> DocumentRecord:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            taken = conn.execute(
                "SELECT 1 FROM documents WHERE kb_id = ? AND (path = ? OR content_hash = ?) "
                "UNION ALL SELECT 1 FROM documents WHERE id = ?",
                (kb_id, document.path, document.content_hash, document_id),
            ).fetchone()
            if taken:
                raise Conflict("this base already holds a document with these bytes or this path")
            document_id = writes.upsert_document(
                conn,
                kb_id,
                document,
                state=DocumentState.PENDING,
                reason=None,
                chunk_count=0,
                identity_key=None,
                settings_key=None,
                text=None,
                new_id=document_id,
            )
            return writes.load_document(conn, kb_id, document_id)

    def find_by_hash(self, kb_id: int, content_hash: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? AND content_hash = ? "
                "ORDER BY created_at LIMIT 1",
                (kb_id, content_hash),
            ).fetchone()
        return document_from_row(row) if row else None

    def list_uploads(self, state: DocumentState | None = None) -> list[tuple[int, str]]:
        sql = "SELECT kb_id, id FROM documents INDEXED BY documents_uploads "
        sql += "WHERE display_name IS NOT NULL"
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " AND state = ?"
            args = (DocumentState(state).value,)
        with self._read() as conn:
            found = conn.execute(sql + " ORDER BY created_at, kb_id, id", args).fetchall()
        return [(kb_id, document_id) for kb_id, document_id in found]

    def set_display_name(self, kb_id: int, document_id: str, sealed: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET display_name = ? WHERE id = ? AND kb_id = ?",
                (sealed, document_id, kb_id),
            )
