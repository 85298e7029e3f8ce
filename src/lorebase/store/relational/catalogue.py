"""The catalogue, written once: knowledge bases, their settings, identity, state and sources.

State writes that change no searchable row (base state and progress) are not announced to the
indexes beside the rows (``_changed``), so a search during a pass does not reload them.
"""

from __future__ import annotations

import time

from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store.base import KnowledgeBase, Source
from lorebase.store.records import (
    KB_COLUMNS,
    OTHER_VECTORS_WHERE,
    kb_from_row,
    name_taken,
    new_source,
    one_named,
    source_from_row,
)
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import RelationalRole
from lorebase.store.states import KbState, Scope, SourceKind
from lorebase.types import EmbedderIdentity

SOURCE_COLUMNS = "id, kb_id, path, label, created_at, kind"


class CatalogueMixin(RelationalRole):
    """:class:`~lorebase.store.base.Catalogue` over a relational database."""

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
        """The unique indexes decide a race between two processes creating one name: the
        loser's unique violation becomes the same ``Conflict`` as a name found taken."""
        if not name or not name.strip():
            raise InvalidInput("a knowledge base needs a name")
        try:
            scope = Scope(scope)
        except ValueError:
            raise InvalidInput("scope must be one of: global, team, personal") from None
        settings = chunk_settings or ChunkSettings()
        now = time.time()
        with self._writing() as tx:
            row = None
            try:
                with tx.savepoint():  # the violation leaves the rest of the transaction usable
                    row = tx.one(
                        "INSERT INTO knowledge_bases (name, description, scope, owner, "
                        "chunk_size, max_tokens, overlap, created_at, updated_at, team_id, "
                        "embedder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
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
                    )
            except tx.dialect.unique_violation:
                raise Conflict(_taken(tx, name, scope, owner, team_id)) from None
            return rows.load_kb(tx, "id", row[0])

    def get_kb(self, name: str, *, totals: bool = True) -> KnowledgeBase:
        found = one_named(name, self.kbs_named(name, totals=False))
        return self.get_kb_by_id(found.id, totals=totals) if totals else found

    def kbs_named(self, name: str, *, totals: bool = False) -> list[KnowledgeBase]:
        with self._reading() as tx:
            found = tx.all(
                f"SELECT {KB_COLUMNS} FROM knowledge_bases WHERE name = ? ORDER BY id", (name,)
            )
            counted = rows.kb_totals(tx, [row[0] for row in found]) if totals and found else {}
        return [kb_from_row(row, counted.get(row[0])) for row in found]

    def get_kb_by_id(self, kb_id: int, *, totals: bool = True) -> KnowledgeBase:
        with self._reading() as tx:
            return rows.load_kb(tx, "id", kb_id, totals=totals)

    def list_kbs(self, *, totals: bool = True) -> list[KnowledgeBase]:
        """Two queries however many bases: the rows, then every base's totals at once."""
        with self._reading() as tx:
            kbs = tx.all(f"SELECT {KB_COLUMNS} FROM knowledge_bases ORDER BY name, id")
            counted = rows.kb_totals(tx, None) if totals else {}
        return [kb_from_row(row, counted.get(row[0])) for row in kbs]

    def delete_kb(self, kb_id: int) -> None:
        """One statement: the base's row (locked first, where rows lock, so writers of the base
        finish before it) and, by cascade, its sources, documents, texts, sections, chunks and
        vectors — after the index rows kept beside them, while the rows they were built from
        still exist."""
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id, "update")
            self._purging(tx, "kb_id", kb_id)
            tx.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))
        self._forget(kb_id)

    def set_kb_identity(self, kb_id: int, identity: EmbedderIdentity) -> None:
        with self._reading() as tx:
            rows.require_kb(tx, kb_id)
        self._identity_id(identity)
        with self._writing() as tx:
            self._update(tx, kb_id, "identity_key = ?", identity.key)
            self._changed(tx, kb_id)

    def switch_kb_embedder(
        self, kb_id: int, identity: EmbedderIdentity, embedder: str | None
    ) -> bool:
        keep = self._identity_id(identity)
        with self._writing() as tx:
            # The row locked first: a vector write checks it under a share lock, so either it
            # sees the switch, or the switch sees its document.
            rows.lock_kb(tx, kb_id, "update")
            other = OTHER_VECTORS_WHERE.format(p="?")
            if tx.one(f"SELECT 1 FROM documents WHERE {other} LIMIT 1", (kb_id, identity.key)):
                return False
            self._update(
                tx,
                kb_id,
                "identity_key = ?, embedder = ?, embedder_next = CASE WHEN embedder_next "
                "IS NOT DISTINCT FROM ? THEN NULL ELSE embedder_next END",
                identity.key,
                embedder,
                embedder,
            )
            self._delete_other_vectors(tx, kb_id, keep)
            self._changed(tx, kb_id, every_document=True)
            return True

    def set_kb_embedder_target(self, kb_id: int, embedder: str | None) -> None:
        with self._writing() as tx:
            self._update(tx, kb_id, "embedder_next = ?", embedder)

    def set_kb_description(self, kb_id: int, description: str) -> None:
        with self._writing() as tx:
            self._update(tx, kb_id, "description = ?", description)

    def update_kb_chunking(self, kb_id: int, settings: ChunkSettings) -> None:
        with self._writing() as tx:
            self._update(
                tx,
                kb_id,
                "chunk_size = ?, max_tokens = ?, overlap = ?",
                settings.chunk_size,
                settings.max_tokens,
                settings.overlap,
            )

    @staticmethod
    def _update(tx: Bound, kb_id: int, assignments: str, *values: object) -> None:
        updated = tx.execute(
            f"UPDATE knowledge_bases SET {assignments}, updated_at = ? WHERE id = ?",
            (*values, time.time(), kb_id),
        ).rowcount
        if not updated:
            raise NotFound(rows.NO_KB)

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
            sql += (
                ", pass_started_at = ?, progress_done = 0, progress_total = 0, "
                "progress_rate = NULL, progress_left = NULL"
            )
            params.append(now)
        if finished:
            sql += ", pass_finished_at = ?"
            params.append(now)
        with self._writing() as tx:
            if not tx.execute(sql + " WHERE id = ?", (*params, kb_id)).rowcount:
                raise NotFound(rows.NO_KB)

    def set_kb_progress(
        self,
        kb_id: int,
        done: int,
        total: int,
        *,
        rate: float | None = None,
        left: int | None = None,
    ) -> None:
        with self._writing() as tx:
            tx.execute(
                "UPDATE knowledge_bases SET progress_done = ?, progress_total = ?, "
                "progress_rate = ?, progress_left = ? WHERE id = ?",
                (done, total, rate, left, kb_id),
            )

    # -- sources -----------------------------------------------------------------------------
    def add_source(self, kb_id: int, path: str, kind: SourceKind = SourceKind.FOLDER) -> Source:
        """Checked and added under the base's row locked (where rows lock; SQLite's one writer
        serialises it anyway): two processes adding overlapping folders at once cannot both
        pass the check."""
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id, "no key update")
            found = tx.all(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ?", (kb_id,))
            followed, label = new_source(path, kind, [source_from_row(row) for row in found])
            created = time.time()
            row = tx.one(
                "INSERT INTO sources (kb_id, path, label, created_at, kind) "
                "VALUES (?, ?, ?, ?, ?) RETURNING id",
                (kb_id, followed, label, created, kind.value),
            )
            source_id = int(row[0])
            if kind is SourceKind.FILE:  # a file added by path before files were followed
                tx.execute(
                    "UPDATE documents SET source_id = ? WHERE kb_id = ? AND path = ? "
                    "AND source_id IS NULL AND display_name IS NULL",
                    (source_id, kb_id, label),
                )
            return Source(source_id, kb_id, followed, label, created, kind)

    def list_sources(self, kb_id: int) -> list[Source]:
        with self._reading() as tx:
            rows.require_kb(tx, kb_id)
            found = tx.all(
                f"SELECT {SOURCE_COLUMNS} FROM sources WHERE kb_id = ? ORDER BY label", (kb_id,)
            )
        return [source_from_row(row) for row in found]

    def remove_source(self, kb_id: int, source_id: int) -> int:
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            found = tx.one(
                f"SELECT 1 FROM sources WHERE id = ? AND kb_id = ?{tx.dialect.lock('update')}",
                (source_id, kb_id),
            )
            if found is None:
                raise NotFound("this knowledge base follows no such folder or file")
            ids = [
                row[0]
                for row in tx.all(
                    "SELECT id FROM documents WHERE kb_id = ? AND source_id = ?", (kb_id, source_id)
                )
            ]
            deleted = self._delete_documents(tx, kb_id, ids)
            tx.execute("DELETE FROM sources WHERE id = ?", (source_id,))
            self._changed(tx, kb_id)
            return len(deleted)


def _taken(tx: Bound, name: str, scope: Scope, owner: str | None, team_id: int | None) -> str:
    """Which base holds the name in the scope of the one being created."""
    params: tuple[object, ...] = ()
    if scope is Scope.GLOBAL:
        where = ""
    elif scope is Scope.TEAM:
        where, params = " AND coalesce(team_id, 0) = ?", (team_id or 0,)
    else:
        where, params = " AND coalesce(owner, '') = ?", (owner or "",)
    row = tx.one(
        f"SELECT id FROM knowledge_bases WHERE name = ? AND scope = ?{where}",
        (name, str(scope), *params),
    )
    return name_taken(name, scope, owner, row[0] if row is not None else None)
