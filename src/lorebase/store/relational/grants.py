"""Bases shared beyond their scope, written once: one row of ``kb_grants`` per grantee."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from lorebase.errors import NotFound
from lorebase.store.base import Grant, Grantee
from lorebase.store.relational.role import RelationalRole
from lorebase.store.states import GrantAccess

_COLUMNS = "id, kb_id, grantee, grantee_id, access, granted_by, created_at"


class GrantsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Grants` over a relational database."""

    def grant(
        self,
        kb_id: int,
        grantee: Grantee,
        grantee_id: int,
        access: GrantAccess,
        granted_by: str | None,
    ) -> Grant:
        with self._writing() as tx:
            if tx.one("SELECT 1 FROM knowledge_bases WHERE id = ?", (kb_id,)) is None:
                raise NotFound("no such knowledge base")
            row = tx.one(
                "INSERT INTO kb_grants (kb_id, grantee, grantee_id, access, granted_by, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kb_id, grantee, grantee_id) "
                "DO UPDATE SET access = excluded.access, granted_by = excluded.granted_by "
                f"RETURNING {_COLUMNS}",
                (kb_id, str(grantee), grantee_id, str(access), granted_by, time.time()),
            )
        return _grant(row)

    def revoke_grant(self, kb_id: int, grant_id: int) -> Grant:
        with self._writing() as tx:
            row = tx.one(
                f"DELETE FROM kb_grants WHERE id = ? AND kb_id = ? RETURNING {_COLUMNS}",
                (grant_id, kb_id),
            )
        if row is None:
            raise NotFound("no such grant of this base; list them to see their ids")
        return _grant(row)

    def grants(self, kb_id: int) -> list[Grant]:
        with self._reading() as tx:
            rows = tx.all(f"SELECT {_COLUMNS} FROM kb_grants WHERE kb_id = ? ORDER BY id", (kb_id,))
        return [_grant(row) for row in rows]

    def shared_with(self, user_id: int, team_ids: Sequence[int]) -> dict[int, GrantAccess]:
        sql = "SELECT kb_id, access FROM kb_grants WHERE (grantee = 'user' AND grantee_id = ?)"
        with self._reading() as tx:
            if team_ids:
                sql += f" OR (grantee = 'team' AND {tx.dialect.any_of('grantee_id')})"
                rows = tx.all(sql, (user_id, tx.dialect.ids([int(t) for t in team_ids])))
            else:
                rows = tx.all(sql, (user_id,))
        shared: dict[int, GrantAccess] = {}
        for kb_id, access in rows:
            if shared.get(int(kb_id)) is not GrantAccess.WRITE:
                shared[int(kb_id)] = GrantAccess(access)
        return shared


def _grant(row: Any) -> Grant:
    return Grant(
        id=int(row[0]),
        kb_id=int(row[1]),
        grantee=Grantee(row[2]),
        grantee_id=int(row[3]),
        access=GrantAccess(row[4]),
        granted_by=None if row[5] is None else str(row[5]),
        created_at=float(row[6]),
    )
