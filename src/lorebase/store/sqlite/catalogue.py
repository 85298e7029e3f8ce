"""The SQLite catalogue: knowledge bases, their settings, identity, state and sources.

State writes that change no searchable row (base state and progress) do not bump the base's
generation, so a search during a pass does not reload its vector matrix.
"""

from __future__ import annotations

import sqlite3
import time

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store.base import (
    KbState,
    KnowledgeBase,
    Scope,
    Source,
    SourceKind,
)
from lorebase.store.records import (
    OTHER_VECTORS_WHERE,
    name_taken,
    new_source,
    one_named,
    source_from_row,
)
from lorebase.store.sqlite import fts, writes
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.rows import KB_COLUMNS, KB_TOTALS_SQL, kb_from_row, placeholders

SOURCE_COLUMNS = "id, kb_id, path, label, created_at, kind"


class CatalogueMixin(SqliteRole):
    """:class:`~lorebase.store.base.Catalogue` over SQLite."""

    # -- knowledge bases ---------------------------------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        owner: str | None = None,
        chunk_settings: ChunkSettings | None = None,
        team_id: int | None = None,
        embedder: str | None = None,
    ) -> KnowledgeBase:
        if not name or not name.strip():
            raise InvalidInput("a knowledge base needs a name")
        try:
            scope = Scope(scope)
        except ValueError:
            raise InvalidInput("scope must be one of: global, team, personal") from None
        settings = chunk_settings or ChunkSettings()
        now = time.time()
        with self._write() as conn:
            try:
                kb_id = conn.execute(
                    "INSERT INTO knowledge_bases (name, description, scope, owner, chunk_size, "
                    "max_tokens, overlap, created_at, updated_at, team_id, embedder) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        name,
                        description,
                        str(scope),
                        owner,
                        settings.chunk_size,
                        settings.max_tokens,
                        settings.overlap,
                        now,
                        now,
                        team_id,
                        embedder,
                    ),
                ).lastrowid
            except sqlite3.IntegrityError:
                raise Conflict(_taken(conn, name, scope, owner, team_id)) from None
            return writes.load_kb(conn, "id", kb_id)

    def get_kb(self, name: str, *, totals: bool = True) -> KnowledgeBase:
        found = one_named(name, self.kbs_named(name, totals=False))
        return self.get_kb_by_id(found.id) if totals else found

    def kbs_named(self, name: str, *, totals: bool = False) -> list[KnowledgeBase]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE name = ? ORDER BY id", (name,)
            ).fetchall()
            counted = {}
            if totals and rows:
                ids = [row[0] for row in rows]
                counted = {
                    row[0]: row[1:]
                    for row in conn.execute(
                        f"{KB_TOTALS_SQL} WHERE kb_id IN ({placeholders(len(ids))}) GROUP BY kb_id",
                        ids,
                    )
                }
        return [kb_from_row(row, counted.get(row[0])) for row in rows]

    def get_kb_by_id(self, kb_id: int, *, totals: bool = True) -> KnowledgeBase:
        with self._read() as conn:
            return writes.load_kb(conn, "id", kb_id, totals=totals)

    def list_kbs(self, *, totals: bool = True) -> list[KnowledgeBase]:
        """Two queries however many bases: the rows, then every base's totals at once."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {KB_COLUMNS} FROM knowledge_bases ORDER BY name")
            kbs = rows.fetchall()
            counted = (
                {row[0]: row[1:] for row in conn.execute(f"{KB_TOTALS_SQL} GROUP BY kb_id")}
                if totals
                else {}
            )
        return [kb_from_row(row, counted.get(row[0])) for row in kbs]

    def delete_kb(self, kb_id: int) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            # The index rows go first, while the rows they were built from still exist.
            if fts.fts_present(conn):
                conn.execute(fts.fts_delete_sql("kb_id"), (kb_id,))
            conn.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))  # cascades
        with self._dense_lock:
            self._dense.forget({kb_id})
        self._lexical.forget(kb_id)

    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            writes.identity_row(conn, identity, create=True)
            conn.execute(
                "UPDATE knowledge_bases SET identity_key = ? WHERE id = ?", (identity.key, kb_id)
            )
            writes.bump(conn, kb_id)

    def switch_kb_embedder(
        self, kb_id: int, identity: EmbedderIdentity, embedder: str | None
    ) -> bool:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            other = OTHER_VECTORS_WHERE.format(p="?")
            if conn.execute(
                f"SELECT 1 FROM documents WHERE {other} LIMIT 1", (kb_id, identity.key)
            ).fetchone():
                return False
            keep = writes.identity_row(conn, identity, create=True)
            conn.execute(
                "UPDATE knowledge_bases SET identity_key = ?, embedder = ?, embedder_next = "
                "CASE WHEN embedder_next IS ? THEN NULL ELSE embedder_next END WHERE id = ?",
                (identity.key, embedder, embedder, kb_id),
            )
            conn.execute(
                "DELETE FROM vectors WHERE identity_id != ? AND chunk_rowid IN "
                "(SELECT rowid FROM chunks WHERE kb_id = ?)",
                (keep, kb_id),
            )
            writes.bump(conn, kb_id, every_document=True)
            return True

    def set_kb_embedder_target(self, kb_id: int, embedder: str | None) -> None:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            conn.execute(
                "UPDATE knowledge_bases SET embedder_next = ?, updated_at = ? WHERE id = ?",
                (embedder, time.time(), kb_id),
            )

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

    # -- state of a pass ---------------------------------------------------------------------
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

    # -- sources -----------------------------------------------------------------------------
    def add_source(self, kb_id: int, path: str, kind: SourceKind = SourceKind.FOLDER) -> Source:
        with self._write() as conn:
            writes.require_kb(conn, kb_id)
            rows = conn.execute(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ?", (kb_id,))
            existing = [source_from_row(row) for row in rows]
            followed, label = new_source(path, kind, existing)
            created = time.time()
            source_id = conn.execute(
                "INSERT INTO sources (kb_id, path, label, created_at, kind) VALUES (?, ?, ?, ?, ?)",
                (kb_id, followed, label, created, kind.value),
            ).lastrowid
            assert source_id is not None  # an INSERT always sets it
            if kind is SourceKind.FILE:  # a file added by path before files were followed
                conn.execute(
                    "UPDATE documents SET source_id = ? WHERE kb_id = ? AND path = ? "
                    "AND source_id IS NULL AND display_name IS NULL",
                    (source_id, kb_id, label),
                )
            return Source(source_id, kb_id, followed, label, created, kind)

    def list_sources(self, kb_id: int) -> list[Source]:
        with self._read() as conn:
            writes.require_kb(conn, kb_id)
            rows = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ? ORDER BY label", (kb_id,)
            ).fetchall()
        return [source_from_row(row) for row in rows]

    def remove_source(self, kb_id: int, source_id: int) -> int:
        with self._write() as conn:
            found = conn.execute(
                "SELECT 1 FROM sources WHERE id = ? AND kb_id = ?", (source_id, kb_id)
            ).fetchone()
            if found is None:
                raise NotFound("this knowledge base follows no such folder or file")
            rows = conn.execute(
                "SELECT id FROM documents WHERE kb_id = ? AND source_id = ?", (kb_id, source_id)
            )
            ids = [row[0] for row in rows]
            writes.delete_documents(conn, ids)
            conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            writes.bump(conn, kb_id)
            return len(ids)


def _taken(
    conn: sqlite3.Connection, name: str, scope: Scope, owner: str | None, team_id: int | None
) -> str:
    """Which base holds the name in the scope of the one being created."""
    params: tuple[object, ...] = ()
    if scope is Scope.GLOBAL:
        where = ""
    elif scope is Scope.TEAM:
        where, params = " AND ifnull(team_id, 0) = ?", (team_id or 0,)
    else:
        where, params = " AND ifnull(owner, '') = ?", (owner or "",)
    row = conn.execute(
        f"SELECT id FROM knowledge_bases WHERE name = ? AND scope = ?{where}",
        (name, str(scope), *params),
    ).fetchone()
    return name_taken(name, scope, owner, row[0] if row is not None else None)
