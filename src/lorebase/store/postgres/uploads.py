"""The PostgreSQL uploads: pending documents for uploaded files, found by hash, listed."""

from __future__ import annotations

from lorebase.errors import Conflict
from lorebase.store.base import DocumentRecord, DocumentState, NewDocument
from lorebase.store.postgres import writes
from lorebase.store.postgres.role import PostgresRole
from lorebase.store.records import DOCUMENT_COLUMNS, document_from_row

TAKEN = "this base already holds a document with these bytes or this path"


class UploadsMixin(PostgresRole):
    """:class:`~lorebase.store.base.Uploads` over PostgreSQL."""

    def create_upload(
        self, kb_id: int, document: NewDocument, document_id: str | None = None
    ) -> DocumentRecord:
        """Uploads of the same bytes to one base are serialised by an advisory lock on (base,
        content hash), so two at once become one document; a path or id taken meanwhile by
        another process is the same ``Conflict``."""
        from psycopg.errors import UniqueViolation

        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                (writes.UPLOAD_LOCK, f"{kb_id}:{document.content_hash}"),
            )
            taken = conn.execute(
                "SELECT 1 FROM documents WHERE kb_id = %s AND (path = %s OR content_hash = %s) "
                "UNION ALL SELECT 1 FROM documents WHERE id = %s",
                (kb_id, document.path, document.content_hash, document_id),
            ).fetchone()
            if taken:
                raise Conflict(TAKEN)
            try:
                with conn.transaction():
                    new_id = writes.upsert_document(
                        conn,
                        kb_id,
                        document,
                        state=DocumentState.PENDING,
                        reason=None,
                        chunk_count=0,
                        lexical_tokens=0,
                        identity_key=None,
                        settings_key=None,
                        text=None,
                        new_document_id=document_id,
                        insert_only=True,
                    )
                    record = writes.load_document(conn, kb_id, new_id)
            except UniqueViolation:  # the path or id was taken meanwhile by another writer
                raise Conflict(TAKEN) from None
            return record

    def find_by_hash(self, kb_id: int, content_hash: str) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = %s "
                "AND content_hash = %s ORDER BY created_at, id LIMIT 1",
                (kb_id, content_hash),
            ).fetchone()
        return document_from_row(row) if row else None

    def list_uploads(self, state: DocumentState | None = None) -> list[tuple[int, str]]:
        sql = "SELECT kb_id, id FROM documents WHERE display_name IS NOT NULL"
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " AND state = %s"
            args = (DocumentState(state).value,)
        with self._read() as conn:
            found = conn.execute(sql + " ORDER BY created_at, kb_id, id", args).fetchall()
        return [(int(kb_id), str(document_id)) for kb_id, document_id in found]

    def set_display_name(self, kb_id: int, document_id: str, sealed: str) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET display_name = %s WHERE id = %s AND kb_id = %s",
                (sealed, document_id, kb_id),
            )
