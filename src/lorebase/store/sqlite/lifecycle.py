"""The SQLite store's half for passes over folders: sources, document and base states,
identity switches. Mixed into :class:`~lorebase.store.sqlite.store.SqliteStore`.

State writes that change no searchable row (document states, base state and progress) do not
bump the base's generation, so a search during a pass does not reload its vector matrix.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store import stored_chunk_id
from lorebase.store.base import MAX_SOURCES, DocumentState, KbState, NewDocument, Source
from lorebase.store.sqlite import writes
from lorebase.store.sqlite.rows import DOCUMENT_VALUE_COLUMNS, document_values, placeholders
from lorebase.types import Chunk

SOURCE_COLUMNS = "id, kb_id, path, label, created_at"
UNFINISHED = (DocumentState.EXTRACTING, DocumentState.CHUNKING, DocumentState.EMBEDDING)


class LifecycleMixin:
    """Needs ``_write()`` and ``_read()`` transactions from the class it is mixed into."""

    if TYPE_CHECKING:

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _read(self) -> AbstractContextManager[sqlite3.Connection]: ...

    # -- sources -----------------------------------------------------------------------------
    def add_source(self, kb_id: int, path: str) -> Source:
        folder = PurePosixPath(path)
        if not folder.is_absolute():
            raise InvalidInput("a source folder must be given as an absolute path")
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ?", (kb_id,))
            existing = [_source(row) for row in rows]
            for source in existing:
                other = PurePosixPath(source.path)
                if folder == other:
                    raise Conflict(f"this knowledge base already follows {path}")
                if folder.is_relative_to(other) or other.is_relative_to(folder):
                    raise Conflict(
                        f"{path} overlaps {source.path}, which this knowledge base already "
                        "follows; sources may not lie inside one another"
                    )
            if len(existing) >= MAX_SOURCES:
                raise InvalidInput(f"a knowledge base follows at most {MAX_SOURCES} folders")
            label = _free_label(folder.name or "root", {s.label for s in existing})
            source_id = conn.execute(
                "INSERT INTO sources (kb_id, path, label, created_at) VALUES (?, ?, ?, ?)",
                (kb_id, str(folder), label, time.time()),
            ).lastrowid
            return Source(source_id, kb_id, str(folder), label, time.time())

    def list_sources(self, kb_id: int) -> list[Source]:
        with self._read() as conn:
            writes.require_kb(conn, kb_id)
            rows = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ? ORDER BY label", (kb_id,)
            ).fetchall()
        return [_source(row) for row in rows]

    def remove_source(self, kb_id: int, source_id: int) -> int:
        with self._write() as conn:
            found = conn.execute(
                "SELECT 1 FROM sources WHERE id = ? AND kb_id = ?", (source_id, kb_id)
            ).fetchone()
            if found is None:
                raise NotFound("this knowledge base follows no such folder")
            rows = conn.execute(
                "SELECT id FROM documents WHERE kb_id = ? AND source_id = ?", (kb_id, source_id)
            )
            ids = [row[0] for row in rows]
            _delete(conn, ids)
            conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            writes.bump(conn, kb_id)
            return len(ids)

    def set_kb_description(self, kb_id: int, description: str) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            conn.execute(
                "UPDATE knowledge_bases SET description = ?, updated_at = ? WHERE id = ?",
                (description, time.time(), kb_id),
            )

    def update_kb_chunking(self, kb_id: int, settings: ChunkSettings) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            conn.execute(
                "UPDATE knowledge_bases SET chunk_size = ?, max_tokens = ?, overlap = ?, "
                "updated_at = ? WHERE id = ?",
                (settings.chunk_size, settings.max_tokens, settings.overlap, time.time(), kb_id),
            )

    # -- document states ---------------------------------------------------------------------
    def mark_pending(self, kb_id: int, documents: Sequence[NewDocument]) -> None:
        if not documents:
            return
        now = time.time()
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            for document in documents:
                updated = conn.execute(
                    "UPDATE documents SET state = ?, updated_at = ? WHERE kb_id = ? AND path = ?",
                    (str(DocumentState.PENDING), now, kb_id, document.path),
                ).rowcount
                if not updated:
                    columns = ", ".join(DOCUMENT_VALUE_COLUMNS)
                    conn.execute(
                        f"INSERT INTO documents (id, kb_id, path, {columns}, state, created_at, "
                        f"updated_at) VALUES ({placeholders(len(DOCUMENT_VALUE_COLUMNS) + 6)})",
                        (writes.new_document_id(), kb_id, document.path,
                         *document_values(document), str(DocumentState.PENDING), now, now),
                    )  # fmt: skip

    def set_document_state(self, kb_id: int, path: str, state: DocumentState) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET state = ?, updated_at = ? WHERE kb_id = ? AND path = ?",
                (str(DocumentState(state)), time.time(), kb_id, path),
            )

    def count_documents_by_state(self) -> dict[DocumentState, int]:
        counts = dict.fromkeys(DocumentState, 0)
        with self._read() as conn:
            for state, count in conn.execute(
                "SELECT state, count(*) FROM documents GROUP BY state"
            ):
                counts[DocumentState(state)] = count
        return counts

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

    def touch_document(self, kb_id: int, document_id: str, mtime: float | None) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE documents SET mtime = ? WHERE id = ? AND kb_id = ?",
                (mtime, document_id, kb_id),
            )

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
            _delete(conn, ids)
            writes.bump(conn, kb_id)

    def reset_unfinished(self) -> int:
        states = [str(s) for s in UNFINISHED]
        with self._write() as conn:
            return conn.execute(
                f"UPDATE documents SET state = ? WHERE state IN ({placeholders(len(states))})",
                (str(DocumentState.PENDING), *states),
            ).rowcount

    # -- knowledge base state ----------------------------------------------------------------
    def set_kb_state(
        self,
        kb_id: int,
        state: KbState,
        reason: str | None = None,
        *,
        started: bool = False,
        finished: bool = False,
    ) -> None:
        now = time.time()
        sql = "UPDATE knowledge_bases SET state = ?, state_reason = ?"
        params: list[object] = [str(KbState(state)), reason]
        if started:
            sql += ", pass_started_at = ?, progress_done = 0, progress_total = 0"
            params.append(now)
        if finished:
            sql += ", pass_finished_at = ?"
            params.append(now)
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            conn.execute(sql + " WHERE id = ?", (*params, kb_id))

    def set_kb_progress(self, kb_id: int, done: int, total: int) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE knowledge_bases SET progress_done = ?, progress_total = ? WHERE id = ?",
                (done, total, kb_id),
            )

    # -- identity switches -------------------------------------------------------------------
    def add_vectors(
        self,
        kb_id: int,
        document_id: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbedderIdentity,
    ) -> None:
        matrix = writes.checked_vectors(chunks, vectors, identity)
        assert matrix is not None
        with self._write() as conn:
            writes.load_document(conn, kb_id, document_id)
            present = conn.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))
            stored = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
            if set(stored) != {row[0] for row in present}:
                raise Conflict("the document's chunks changed; index it again instead")
            writes.write_vectors(conn, document_id, chunks, stored, matrix, identity)
            conn.execute(
                "UPDATE documents SET identity_key = ?, state = ?, updated_at = ? WHERE id = ?",
                (identity.key, str(DocumentState.INDEXED), time.time(), document_id),
            )
            writes.bump(conn, kb_id, [document_id])

    def purge_other_identities(self, kb_id: int, keep: EmbedderIdentity) -> None:
        with self._write() as conn:
            keep_id = writes.identity_row(conn, keep, create=True)
            conn.execute(
                "DELETE FROM vectors WHERE identity_id != ? AND chunk_rowid IN "
                "(SELECT rowid FROM chunks WHERE kb_id = ?)",
                (keep_id, kb_id),
            )
            writes.bump(conn, kb_id, every_document=True)


def _source(row: Sequence[object]) -> Source:
    return Source(int(row[0]), int(row[1]), str(row[2]), str(row[3]), float(row[4]))  # type: ignore[arg-type]


def _free_label(name: str, taken: set[str]) -> str:
    """The folder's name, or ``name-2``, ``name-3``… when another source has it."""
    label, n = name, 1
    while label in taken:
        n += 1
        label = f"{name}-{n}"
    return label


def _delete(conn: sqlite3.Connection, document_ids: Sequence[str]) -> None:
    for document_id in document_ids:
        writes.purge_chunks(conn, document_id)
        conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
