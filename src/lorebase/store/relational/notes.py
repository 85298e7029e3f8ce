"""The earlier versions of notes, written once: kept in ``note_versions``, one row per edit."""

from __future__ import annotations

import time
from collections.abc import Sequence

from lorebase.errors import NotFound
from lorebase.store.base import NoteVersion
from lorebase.store.relational import rows
from lorebase.store.relational.role import RelationalRole

_COLUMNS = "document_id, version, title, body, author, created_at"


class NotesMixin(RelationalRole):
    """:class:`~lorebase.store.base.Notes` over a relational database."""

    def keep_note_version(
        self, kb_id: int, document_id: str, title: str, text: str, author: str | None
    ) -> NoteVersion:
        """The document's row is locked first: two edits at once number their versions one
        after the other."""
        now = time.time()
        with self._writing() as tx:
            found = tx.one(
                "SELECT 1 FROM documents WHERE id = ? AND kb_id = ?" + tx.dialect.lock("update"),
                (document_id, kb_id),
            )
            if found is None:
                raise NotFound("no such note in this knowledge base")
            last = tx.one(
                "SELECT coalesce(max(version), 0) FROM note_versions WHERE document_id = ?",
                (document_id,),
            )
            version = int(last[0]) + 1
            tx.execute(
                f"INSERT INTO note_versions (kb_id, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (kb_id, document_id, version, *rows.text_values(tx, (title, text)), author, now),
            )
        return NoteVersion(document_id, version, title, text, author, now)

    def note_versions(self, kb_id: int, document_id: str) -> list[NoteVersion]:
        with self._reading() as tx:
            found = tx.all(
                f"SELECT {_COLUMNS} FROM note_versions WHERE document_id = ? AND kb_id = ? "
                "ORDER BY version",
                (document_id, kb_id),
            )
        return [_version(row) for row in found]

    def every_note_version(self) -> list[NoteVersion]:
        with self._reading() as tx:
            found = tx.all(f"SELECT {_COLUMNS} FROM note_versions ORDER BY document_id, version")
        return [_version(row) for row in found]

    def replace_note_version(self, document_id: str, version: int, title: str, text: str) -> None:
        with self._writing() as tx:
            tx.execute(
                "UPDATE note_versions SET title = ?, body = ? "
                "WHERE document_id = ? AND version = ?",
                (*rows.text_values(tx, (title, text)), document_id, version),
            )


def _version(row: Sequence[object]) -> NoteVersion:
    document_id, version, title, body, author, created_at = row
    return NoteVersion(
        str(document_id),
        int(str(version)),
        str(title),
        str(body),
        None if author is None else str(author),
        float(str(created_at)),
    )
