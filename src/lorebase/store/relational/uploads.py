"""Uploads, written once: pending documents for uploaded files, found by hash, listed."""

from __future__ import annotations

from lorebase.errors import Conflict
from lorebase.store.base import DocumentRecord, NewDocument
from lorebase.store.records import DOCUMENT_COLUMNS, document_from_row
from lorebase.store.relational import rows
from lorebase.store.relational.role import RelationalRole
from lorebase.store.states import DocumentState

TAKEN = "this base already holds a document with these bytes or this path"


class UploadsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Uploads` over a relational database."""

    def create_upload(
        self, kb_id: int, document: NewDocument, document_id: str | None = None
    ) -> DocumentRecord:
        """Uploads of the same bytes to one base wait for each other (see
        ``_serialise_upload``), so two at once become one document; a path or id taken
        meanwhile by another process is the same ``Conflict``."""
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            self._serialise_upload(tx, kb_id, document.content_hash)
            taken = tx.one(
                "SELECT 1 FROM documents WHERE kb_id = ? AND (path = ? OR content_hash = ?) "
                "UNION ALL SELECT 1 FROM documents WHERE id = ?",
                (kb_id, document.path, document.content_hash, document_id),
            )
            if taken:
                raise Conflict(TAKEN)
            with tx.unique(Conflict(TAKEN)):  # the path or id was taken meanwhile
                new_id = rows.upsert_document(
                    tx,
                    kb_id,
                    document,
                    state=DocumentState.PENDING,
                    reason=None,
                    chunk_count=0,
                    identity_key=None,
                    settings_key=None,
                    text=None,
                    purge=self._purge,
                    new_document_id=document_id,
                    insert_only=True,
                    extra=self._document_extra,
                )
                return rows.load_document(tx, kb_id, new_id)

    def find_by_hash(self, kb_id: int, content_hash: str) -> DocumentRecord | None:
        with self._reading() as tx:
            row = tx.one(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE kb_id = ? "
                "AND content_hash = ? ORDER BY created_at, id LIMIT 1",
                (kb_id, content_hash),
            )
        return document_from_row(row) if row else None

    def list_uploads(self, state: DocumentState | None = None) -> list[tuple[int, str]]:
        sql = "SELECT kb_id, id FROM documents WHERE display_name IS NOT NULL"
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " AND state = ?"
            args = (DocumentState(state).value,)
        with self._reading() as tx:
            found = tx.all(sql + " ORDER BY created_at, kb_id, id", args)
        return [(int(kb_id), str(document_id)) for kb_id, document_id in found]

    def set_display_name(self, kb_id: int, document_id: str, sealed: str) -> None:
        with self._writing() as tx:
            tx.execute(
                "UPDATE documents SET display_name = ? WHERE id = ? AND kb_id = ?",
                (sealed, document_id, kb_id),
            )
