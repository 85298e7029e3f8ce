"""Accounts written once over any relational database (SQLite, PostgreSQL): users, teams,
keys, sessions and the audit log, through the store's :class:`~lorebase.store.relational.
dialect.Bound` connections. Each backend adds only how its tables are migrated and how a
database is opened (``accounts/sqlite.py``, ``accounts/postgres.py``).

Nothing is cached per process: a key, a session or a revocation made through one process is
seen by every other at its next lookup (one indexed query each). Where the database locks
rows, a key is made under a share lock on its user (the user cannot be deleted before it is
committed) and its parent (a revocation committed meanwhile waits, then revokes it too).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, Protocol, Self, TypeVar, runtime_checkable

from lorebase.accounts.base import AccountStore, ApiKey, AuditEntry, Role, Session, Team, User
from lorebase.accounts.common import (
    AUDIT_COLUMNS,
    KEY_COLUMNS,
    USER_COLUMNS,
    audit_from_row,
    check_name,
    checked_parent,
    credential_from_row,
    credential_params,
    credential_sql,
    key_from_row,
    key_hash,
    looks_like_key,
    new_key,
    new_session_token,
    revoke_tree_sql,
    user_from_row,
)
from lorebase.errors import Conflict, NotFound
from lorebase.settings import DEFAULT_AUDIT_ROWS
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import Database

D = TypeVar("D", bound=Database)
D_co = TypeVar("D_co", bound=Database, covariant=True)


@runtime_checkable
class HasDatabase(Protocol[D_co]):
    """Something that holds a database, such as a store (whose ``database`` the accounts
    share)."""

    @property
    def database(self) -> D_co: ...


class RelationalAccounts(AccountStore, Generic[D]):
    """:class:`AccountStore` over a relational :class:`Database` (``D``: the backend's
    database class): one it opened itself (closed with it, see :meth:`_owning`), or one it was
    given, or the one of a store it was given (closed by its owner). Either way the account
    migrations are applied first (``_migrate``, each backend's)."""

    _owned: bool = False

    def __init__(
        self, database: D | HasDatabase[D], *, audit_rows: int = DEFAULT_AUDIT_ROWS
    ) -> None:
        """``audit_rows``: the most entries the audit log keeps (the oldest go first)."""
        self._db: D = database.database if isinstance(database, HasDatabase) else database
        self._audit_rows = audit_rows
        self._migrate()

    @property
    def database(self) -> D:
        return self._db

    def _migrate(self) -> None:
        """Apply the missing account migrations to the database."""
        raise NotImplementedError

    @classmethod
    def _owning(cls, database: D) -> Self:
        """Accounts over a database opened for them alone (closed if opening fails)."""
        try:
            accounts = cls(database)
        except BaseException:
            database.close()
            raise
        accounts._owned = True
        return accounts

    def close(self) -> None:
        """Close the database if this object opened it (a shared one belongs to its owner)."""
        if self._owned:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _writing(self) -> Iterator[Bound]:
        with self._db.write() as conn:
            yield self._db.dialect.bind(conn)

    @contextmanager
    def _reading(self) -> Iterator[Bound]:
        with self._db.read() as conn:
            yield self._db.dialect.bind(conn)

    # -- users and teams ---------------------------------------------------------------------
    def create_user(self, name: str, role: Role = Role.MEMBER) -> User:
        name = check_name(name, "user")
        now = time.time()
        with self._writing() as tx, tx.unique(Conflict(f"a user named {name!r} already exists")):
            user_id = _returned_id(
                tx.one(
                    "INSERT INTO users (name, role, created_at) VALUES (?, ?, ?) RETURNING id",
                    (name, str(Role(role)), now),
                )
            )
        return User(user_id, name, Role(role), now)

    def get_user(self, name: str) -> User:
        with self._reading() as tx:
            row = tx.execute(f"SELECT {USER_COLUMNS} FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFound("no such user; `lorebase users list` shows them")
        return user_from_row(row)

    def list_users(self) -> list[User]:
        with self._reading() as tx:
            rows = tx.execute(
                f"SELECT {USER_COLUMNS} FROM users ORDER BY name{tx.dialect.binary_order}"
            )
            return [user_from_row(row) for row in rows.fetchall()]

    def create_team(self, name: str) -> Team:
        name = check_name(name, "team")
        now = time.time()
        with self._writing() as tx, tx.unique(Conflict(f"a team named {name!r} already exists")):
            team_id = _returned_id(
                tx.one(
                    "INSERT INTO teams (name, created_at) VALUES (?, ?) RETURNING id", (name, now)
                )
            )
        return Team(team_id, name, now)

    def get_team(self, name: str) -> Team:
        with self._reading() as tx:
            row = tx.execute(
                "SELECT id, name, created_at FROM teams WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            raise NotFound("no such team; `lorebase teams list` shows them")
        return _team(row)

    def list_teams(self) -> list[Team]:
        with self._reading() as tx:
            rows = tx.execute(
                f"SELECT id, name, created_at FROM teams ORDER BY name{tx.dialect.binary_order}"
            )
            return [_team(row) for row in rows.fetchall()]

    def set_member(self, team_id: int, user_id: int, role: Role | None) -> None:
        with self._writing() as tx:
            if role is None:
                tx.execute(
                    "DELETE FROM team_members WHERE team_id = ? AND user_id = ?",
                    (team_id, user_id),
                )
                return
            tx.execute(
                "INSERT INTO team_members (team_id, user_id, role) VALUES (?, ?, ?) "
                "ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role",
                (team_id, user_id, str(Role(role))),
            )

    def memberships(self, user_id: int) -> dict[int, Role]:
        with self._reading() as tx:
            rows = tx.execute(
                "SELECT team_id, role FROM team_members WHERE user_id = ?", (user_id,)
            ).fetchall()
        return {int(team_id): Role(role) for team_id, role in rows}

    # -- keys --------------------------------------------------------------------------------
    def create_key(
        self,
        user_id: int,
        name: str = "",
        expires_at: float | None = None,
        parent_id: int | None = None,
    ) -> tuple[str, ApiKey]:
        now = time.time()
        made = new_key(name, expires_at, now)
        with self._writing() as tx:
            # FOR KEY SHARE: the user cannot be deleted before this key is committed.
            found = tx.execute(
                f"SELECT 1 FROM users WHERE id = ?{tx.dialect.lock('key share')}", (user_id,)
            ).fetchone()
            if found is None:
                raise NotFound("no such user")
            if parent_id is not None:
                # FOR SHARE: a revocation of the parent committed meanwhile waits for this
                # key, then revokes it too.
                parent = tx.execute(
                    "SELECT user_id, expires_at, revoked_at FROM api_keys WHERE id = ?"
                    + tx.dialect.lock("share"),
                    (parent_id,),
                ).fetchone()
                expires_at = checked_parent(parent, user_id, expires_at, now)
            key_id = _returned_id(
                tx.one(
                    "INSERT INTO api_keys (user_id, prefix, hash, name, created_at, expires_at, "
                    "parent_id) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (user_id, made.prefix, made.hash, name, now, expires_at, parent_id),
                )
            )
        record = ApiKey(key_id, user_id, made.prefix, name, now, expires_at, None, None, parent_id)
        return made.key, record

    def resolve_credential(self, credential: str, *, session: bool) -> tuple[User, int] | None:
        params = credential_params(credential, session, time.time())
        if params is None:
            return None
        with self._reading() as tx:
            row = tx.execute(credential_sql("?", session), params).fetchone()
        return credential_from_row(row)

    def revoke_key(self, key_id: int) -> None:
        with self._writing() as tx:
            active = tx.execute(
                "SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL"
                + tx.dialect.lock("update"),
                (key_id,),
            ).fetchone()
            if active is None:
                raise NotFound("no such active key; `lorebase keys list` shows them")
            tx.execute(revoke_tree_sql("?"), (key_id, time.time()))

    def list_keys(self, user_id: int | None = None) -> list[ApiKey]:
        where, params = ("", ()) if user_id is None else (" WHERE user_id = ?", (user_id,))
        with self._reading() as tx:
            rows = tx.execute(f"SELECT {KEY_COLUMNS} FROM api_keys{where} ORDER BY id", params)
            return [key_from_row(row) for row in rows.fetchall()]

    # -- sessions ----------------------------------------------------------------------------
    def create_session(self, key: str, expires_at: float) -> tuple[str, Session] | None:
        if not looks_like_key(key):
            return None
        now = time.time()
        token = new_session_token()
        with self._writing() as tx:
            # FOR SHARE: a revocation committed meanwhile waits for this session, then ends it.
            row = tx.execute(
                "SELECT id, user_id, expires_at FROM api_keys WHERE hash = ? "
                "AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
                + tx.dialect.lock("share"),
                (key_hash(key), now),
            ).fetchone()
            if row is None:
                return None
            key_id, user_id, key_expires = int(row[0]), int(row[1]), row[2]
            if key_expires is not None:
                expires_at = min(expires_at, float(key_expires))
            tx.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))  # sweep
            session_id = _returned_id(
                tx.one(
                    "INSERT INTO sessions (key_id, hash, created_at, expires_at) "
                    "VALUES (?, ?, ?, ?) RETURNING id",
                    (key_id, key_hash(token), now, expires_at),
                )
            )
        return token, Session(session_id, user_id, key_id, now, expires_at)

    def end_session(self, token: str) -> None:
        with self._writing() as tx:
            tx.execute("DELETE FROM sessions WHERE hash = ?", (key_hash(token),))

    # -- users' own embedder keys (sealed by the service) ---------------------------------------
    def set_embedder_key(self, user_id: int, embedder: str, sealed: str) -> None:
        with self._writing() as tx:
            tx.execute(
                "INSERT INTO user_embedder_keys (user_id, embedder, sealed, created_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (user_id, embedder) DO UPDATE SET "
                "sealed = excluded.sealed, created_at = excluded.created_at",
                (user_id, embedder, sealed, time.time()),
            )

    def embedder_keys(self, user_id: int) -> list[tuple[str, float]]:
        with self._reading() as tx:
            rows = tx.execute(
                "SELECT embedder, created_at FROM user_embedder_keys WHERE user_id = ? "
                f"ORDER BY embedder{tx.dialect.binary_order}",
                (user_id,),
            ).fetchall()
        return [(str(name), float(at)) for name, at in rows]

    def sealed_embedder_key(self, user_name: str, embedder: str) -> str | None:
        with self._reading() as tx:
            row = tx.execute(
                "SELECT k.sealed FROM user_embedder_keys k JOIN users u ON u.id = k.user_id "
                "WHERE u.name = ? AND k.embedder = ?",
                (user_name, embedder),
            ).fetchone()
        return None if row is None else str(row[0])

    def delete_embedder_key(self, user_id: int, embedder: str) -> bool:
        with self._writing() as tx:
            gone = tx.execute(
                "DELETE FROM user_embedder_keys WHERE user_id = ? AND embedder = ?",
                (user_id, embedder),
            )
            return gone.rowcount > 0

    def sealed_embedder_keys(self) -> list[tuple[int, str, str]]:
        with self._reading() as tx:
            rows = tx.execute("SELECT user_id, embedder, sealed FROM user_embedder_keys").fetchall()
        return [(int(user), str(name), str(sealed)) for user, name, sealed in rows]

    # -- audit -------------------------------------------------------------------------------
    def audit(self, actor: str, action: str, target: str, client: str | None = None) -> None:
        """Ids only grow, so the entries past the bound are one range of the primary key."""
        with self._writing() as tx:
            entry = _returned_id(
                tx.one(
                    "INSERT INTO audit_log (at, actor, action, target, client) "
                    "VALUES (?, ?, ?, ?, ?) RETURNING id",
                    (time.time(), actor, action, target, client),
                )
            )
            tx.execute("DELETE FROM audit_log WHERE id <= ?", (entry - self._audit_rows,))

    def audit_log(self, limit: int = 100, since: float | None = None) -> list[AuditEntry]:
        where, params = ("", ()) if since is None else (" WHERE at >= ?", (since,))
        with self._reading() as tx:
            rows = tx.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit_log{where} ORDER BY id DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [audit_from_row(row) for row in rows]


def _returned_id(row: Any) -> int:
    assert row is not None  # INSERT … RETURNING always returns the row
    return int(row[0])


def _team(row: Any) -> Team:
    return Team(int(row[0]), str(row[1]), float(row[2]))
