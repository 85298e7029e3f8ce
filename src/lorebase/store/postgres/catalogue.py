"""The PostgreSQL catalogue: knowledge bases, their settings, identity, state and sources."""

from __future__ import annotations

import time
from typing import Any

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
from lorebase.store.postgres import writes
from lorebase.store.postgres.role import PostgresRole
from lorebase.store.records import (
    KB_COLUMNS,
    OTHER_VECTORS_WHERE,
    kb_from_row,
    name_taken,
    new_source,
    one_named,
    source_from_row,
)

SOURCE_COLUMNS = "id, kb_id, path, label, created_at, kind"


class CatalogueMixin(PostgresRole):
    """:class:`~lorebase.store.base.Catalogue` over PostgreSQL."""

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
        """The partial unique indexes decide a race between two processes creating one name:
        the loser's unique violation becomes the same ``Conflict`` as a name found taken."""
        from psycopg.errors import UniqueViolation

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
                with conn.transaction():  # a savepoint: the violation leaves the rest usable
                    row = conn.execute(
                        "INSERT INTO knowledge_bases (name, description, scope, owner, "
                        "chunk_size, max_tokens, overlap, created_at, updated_at, team_id, "
                        "embedder) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                        "RETURNING id",
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
                    ).fetchone()
            except UniqueViolation:
                raise Conflict(_taken(conn, name, scope, owner, team_id)) from None
            return writes.load_kb(conn, "id", row[0])

    def get_kb(self, name: str, *, totals: bool = True) -> KnowledgeBase:
        found = one_named(name, self.kbs_named(name, totals=False))
        return self.get_kb_by_id(found.id) if totals else found

    def kbs_named(self, name: str, *, totals: bool = False) -> list[KnowledgeBase]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE name = %s ORDER BY id", (name,)
            ).fetchall()
            counted = {}
            if totals and rows:
                ids = [row[0] for row in rows]
                counted = {
                    row[0]: row[1:]
                    for row in conn.execute(
                        f"{writes.KB_TOTALS_SQL} WHERE kb_id = ANY(%s) GROUP BY kb_id", (ids,)
                    )
                }
        return [kb_from_row(row, counted.get(row[0])) for row in rows]

    def get_kb_by_id(self, kb_id: int, *, totals: bool = True) -> KnowledgeBase:
        with self._read() as conn:
            return writes.load_kb(conn, "id", kb_id, totals=totals)

    def list_kbs(self, *, totals: bool = True) -> list[KnowledgeBase]:
        with self._read() as conn:
            kbs = conn.execute(
                f"SELECT {KB_COLUMNS} FROM knowledge_bases ORDER BY name, id"
            ).fetchall()
            counted = (
                {row[0]: row[1:] for row in conn.execute(f"{writes.KB_TOTALS_SQL} GROUP BY kb_id")}
                if totals
                else {}
            )
        return [kb_from_row(row, counted.get(row[0])) for row in kbs]

    def delete_kb(self, kb_id: int) -> None:
        """One statement: the base's row (locked first, so writers of the base finish before
        it) and, by cascade, its sources, documents, texts, sections, chunks and vectors."""
        with self._write() as conn:
            deleted = conn.execute(
                "DELETE FROM knowledge_bases WHERE id = %s RETURNING id", (kb_id,)
            ).fetchone()
            if deleted is None:
                raise NotFound(writes.NO_KB)

    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        with self._read() as conn:
            writes.require_kb(conn, kb_id)
        self._identity_id(identity)
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE knowledge_bases SET identity_key = %s, updated_at = %s WHERE id = %s",
                (identity.key, time.time(), kb_id),
            ).rowcount
            if not updated:
                raise NotFound(writes.NO_KB)

    def switch_kb_embedder(
        self, kb_id: int, identity: EmbedderIdentity, embedder: str | None
    ) -> bool:
        keep = self._identity_id(identity)
        with self._write() as conn:
            # The row locked first: a vector write checks it under a share lock, so either it
            # sees the switch, or the switch sees its document.
            if (
                conn.execute(
                    "SELECT 1 FROM knowledge_bases WHERE id = %s FOR UPDATE", (kb_id,)
                ).fetchone()
                is None
            ):
                raise NotFound(writes.NO_KB)
            other = OTHER_VECTORS_WHERE.format(p="%s")
            if conn.execute(
                f"SELECT 1 FROM documents WHERE {other} LIMIT 1", (kb_id, identity.key)
            ).fetchone():
                return False
            conn.execute(
                "UPDATE knowledge_bases SET identity_key = %s, embedder = %s, embedder_next = "
                "CASE WHEN embedder_next IS NOT DISTINCT FROM %s THEN NULL ELSE embedder_next "
                "END, updated_at = %s WHERE id = %s",
                (identity.key, embedder, embedder, time.time(), kb_id),
            )
            conn.execute(
                "DELETE FROM vectors WHERE kb_id = %s AND identity_id <> %s", (kb_id, keep)
            )
            return True

    def set_kb_embedder_target(self, kb_id: int, embedder: str | None) -> None:
        self._update_kb(kb_id, "embedder_next = %s", embedder)

    def set_kb_description(self, kb_id: int, description: str) -> None:
        self._update_kb(kb_id, "description = %s", description)

    def update_kb_chunking(self, kb_id: int, settings: ChunkSettings) -> None:
        self._update_kb(
            kb_id,
            "chunk_size = %s, max_tokens = %s, overlap = %s",
            settings.chunk_size,
            settings.max_tokens,
            settings.overlap,
        )

    def _update_kb(self, kb_id: int, assignments: str, *values: object) -> None:
        with self._write() as conn:
            updated = conn.execute(
                f"UPDATE knowledge_bases SET {assignments}, updated_at = %s WHERE id = %s",
                (*values, time.time(), kb_id),
            ).rowcount
            if not updated:
                raise NotFound(writes.NO_KB)

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
        sql = "UPDATE knowledge_bases SET state = %s, state_reason = %s"
        params: list[object] = [str(KbState(state)), reason]
        if started:
            sql += ", pass_started_at = %s, progress_done = 0, progress_total = 0"
            params.append(now)
        if finished:
            sql += ", pass_finished_at = %s"
            params.append(now)
        with self._write() as conn:
            if not conn.execute(sql + " WHERE id = %s", (*params, kb_id)).rowcount:
                raise NotFound(writes.NO_KB)

    def set_kb_progress(self, kb_id: int, done: int, total: int) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE knowledge_bases SET progress_done = %s, progress_total = %s WHERE id = %s",
                (done, total, kb_id),
            )

    # -- sources -----------------------------------------------------------------------------
    def add_source(self, kb_id: int, path: str, kind: SourceKind = SourceKind.FOLDER) -> Source:
        """Checked and added under the base's row locked for update: two processes adding
        overlapping folders at once cannot both pass the check."""
        with self._write() as conn:
            found = conn.execute(
                "SELECT 1 FROM knowledge_bases WHERE id = %s FOR NO KEY UPDATE", (kb_id,)
            ).fetchone()
            if found is None:
                raise NotFound(writes.NO_KB)
            rows = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = %s", (kb_id,)
            ).fetchall()
            existing = [source_from_row(row) for row in rows]
            followed, label = new_source(path, kind, existing)
            created = time.time()
            row = conn.execute(
                "INSERT INTO sources (kb_id, path, label, created_at, kind) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (kb_id, followed, label, created, kind.value),
            ).fetchone()
            source_id = int(row[0])
            if kind is SourceKind.FILE:  # a file added by path before files were followed
                conn.execute(
                    "UPDATE documents SET source_id = %s WHERE kb_id = %s AND path = %s "
                    "AND source_id IS NULL AND display_name IS NULL",
                    (source_id, kb_id, label),
                )
            return Source(source_id, kb_id, followed, label, created, kind)

    def list_sources(self, kb_id: int) -> list[Source]:
        with self._read() as conn:
            writes.require_kb(conn, kb_id)
            rows = conn.execute(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = %s ORDER BY label", (kb_id,)
            ).fetchall()
        return [source_from_row(row) for row in rows]

    def remove_source(self, kb_id: int, source_id: int) -> int:
        with self._write() as conn:
            writes.lock_kb(conn, kb_id)
            found = conn.execute(
                "SELECT 1 FROM sources WHERE id = %s AND kb_id = %s FOR UPDATE", (source_id, kb_id)
            ).fetchone()
            if found is None:
                raise NotFound("this knowledge base follows no such folder or file")
            rows = conn.execute(
                "SELECT id FROM documents WHERE kb_id = %s AND source_id = %s", (kb_id, source_id)
            ).fetchall()
            deleted = writes.delete_documents(conn, kb_id, [row[0] for row in rows])
            conn.execute("DELETE FROM sources WHERE id = %s", (source_id,))
            return len(deleted)


def _taken(conn: Any, name: str, scope: Scope, owner: str | None, team_id: int | None) -> str:
    """Which base holds the name in the scope of the one being created."""
    params: tuple[object, ...] = ()
    if scope is Scope.GLOBAL:
        where = ""
    elif scope is Scope.TEAM:
        where, params = " AND coalesce(team_id, 0) = %s", (team_id or 0,)
    else:
        where, params = " AND coalesce(owner, '') = %s", (owner or "",)
    row = conn.execute(
        f"SELECT id FROM knowledge_bases WHERE name = %s AND scope = %s{where}",
        (name, str(scope), *params),
    ).fetchone()
    return name_taken(name, scope, owner, row[0] if row is not None else None)
