"""Accounts in PostgreSQL: their own tables and migrations (``postgres_schema.py``) in the one
database every lorebase process shares, over a :class:`PostgresDatabase` they are given (the
store's pool) or open themselves.

Nothing is cached per process: a key, a session or a revocation made through one process is
seen by every other at its next lookup (one indexed query each).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from lorebase.accounts.base import AccountStore, ApiKey, AuditEntry, Role, Session, Team, User
from lorebase.accounts.common import (
    AUDIT_COLUMNS,
    KEY_COLUMNS,
    USER_COLUMNS,
    ClosesOwned,
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
from lorebase.accounts.postgres_schema import migrate_accounts
from lorebase.errors import Conflict, NotFound
from lorebase.store.postgres.database import PostgresDatabase


class HasPostgresDatabase(Protocol):
    """Something that holds a PostgreSQL database, such as the PostgreSQL store."""

    @property
    def database(self) -> PostgresDatabase: ...


class PostgresAccounts(ClosesOwned, AccountStore):
    """:class:`AccountStore` over PostgreSQL. ``PostgresAccounts(database)`` (or a store that
    has ``.database``) shares that pool, closed by its owner; ``PostgresAccounts.open(url)``
    opens a pool of its own, closed by :meth:`close`. Either way the account migrations are
    applied first."""

    def __init__(self, database: PostgresDatabase | HasPostgresDatabase) -> None:
        self._db = database if isinstance(database, PostgresDatabase) else database.database
        self._owned = False
        migrate_accounts(self._db)

    @classmethod
    def open(cls, url: str) -> PostgresAccounts:
        database = PostgresDatabase(url)
        try:
            accounts = cls(database)
        except BaseException:
            database.close()
            raise
        accounts._owned = True
        return accounts

    @property
    def database(self) -> PostgresDatabase:
        return self._db

    def _close_database(self) -> None:
        self._db.close()

    @contextmanager
    def _unique(self, message: str) -> Iterator[None]:
        """Turn a unique-constraint violation (a name taken) into ``Conflict``."""
        from psycopg import errors

        try:
            yield
        except errors.UniqueViolation:
            raise Conflict(message) from None

    # -- users and teams ---------------------------------------------------------------------
    def create_user(self, name: str, role: Role = Role.MEMBER) -> User:
        name = check_name(name, "user")
        now = time.time()
        with self._unique(f"a user named {name!r} already exists"), self._db.write() as conn:
            user_id = _returned_id(
                conn.execute(
                    "INSERT INTO users (name, role, created_at) VALUES (%s, %s, %s) RETURNING id",
                    (name, str(Role(role)), now),
                )
            )
        return User(user_id, name, Role(role), now)

    def get_user(self, name: str) -> User:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {USER_COLUMNS} FROM users WHERE name = %s", (name,)
            ).fetchone()
        if row is None:
            raise NotFound("no such user; `lorebase users list` shows them")
        return user_from_row(row)

    def list_users(self) -> list[User]:
        with self._db.read() as conn:
            rows = conn.execute(f'SELECT {USER_COLUMNS} FROM users ORDER BY name COLLATE "C"')
            return [user_from_row(row) for row in rows.fetchall()]

    def create_team(self, name: str) -> Team:
        name = check_name(name, "team")
        now = time.time()
        with self._unique(f"a team named {name!r} already exists"), self._db.write() as conn:
            team_id = _returned_id(
                conn.execute(
                    "INSERT INTO teams (name, created_at) VALUES (%s, %s) RETURNING id",
                    (name, now),
                )
            )
        return Team(team_id, name, now)

    def get_team(self, name: str) -> Team:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT id, name, created_at FROM teams WHERE name = %s", (name,)
            ).fetchone()
        if row is None:
            raise NotFound("no such team; `lorebase teams list` shows them")
        return _team(row)

    def list_teams(self) -> list[Team]:
        with self._db.read() as conn:
            rows = conn.execute('SELECT id, name, created_at FROM teams ORDER BY name COLLATE "C"')
            return [_team(row) for row in rows.fetchall()]

    def set_member(self, team_id: int, user_id: int, role: Role | None) -> None:
        with self._db.write() as conn:
            if role is None:
                conn.execute(
                    "DELETE FROM team_members WHERE team_id = %s AND user_id = %s",
                    (team_id, user_id),
                )
                return
            conn.execute(
                "INSERT INTO team_members (team_id, user_id, role) VALUES (%s, %s, %s) "
                "ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role",
                (team_id, user_id, str(Role(role))),
            )

    def memberships(self, user_id: int) -> dict[int, Role]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT team_id, role FROM team_members WHERE user_id = %s", (user_id,)
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
        with self._db.write() as conn:
            # FOR KEY SHARE: the user cannot be deleted before this key is committed.
            found = conn.execute(
                "SELECT 1 FROM users WHERE id = %s FOR KEY SHARE", (user_id,)
            ).fetchone()
            if found is None:
                raise NotFound("no such user")
            if parent_id is not None:
                # FOR SHARE: a revocation of the parent committed meanwhile waits for this
                # key, then revokes it too.
                parent = conn.execute(
                    "SELECT user_id, expires_at, revoked_at FROM api_keys WHERE id = %s FOR SHARE",
                    (parent_id,),
                ).fetchone()
                expires_at = checked_parent(parent, user_id, expires_at, now)
            key_id = _returned_id(
                conn.execute(
                    "INSERT INTO api_keys (user_id, prefix, hash, name, created_at, expires_at, "
                    "parent_id) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (user_id, made.prefix, made.hash, name, now, expires_at, parent_id),
                )
            )
        record = ApiKey(key_id, user_id, made.prefix, name, now, expires_at, None, None, parent_id)
        return made.key, record

    def resolve_credential(self, credential: str, *, session: bool) -> tuple[User, int] | None:
        params = credential_params(credential, session, time.time())
        if params is None:
            return None
        with self._db.read() as conn:
            row = conn.execute(credential_sql("%s", session), params).fetchone()
        return credential_from_row(row)

    def revoke_key(self, key_id: int) -> None:
        with self._db.write() as conn:
            active = conn.execute(
                "SELECT 1 FROM api_keys WHERE id = %s AND revoked_at IS NULL FOR UPDATE",
                (key_id,),
            ).fetchone()
            if active is None:
                raise NotFound("no such active key; `lorebase keys list` shows them")
            conn.execute(revoke_tree_sql("%s"), (key_id, time.time()))

    def list_keys(self, user_id: int | None = None) -> list[ApiKey]:
        where, params = ("", ()) if user_id is None else (" WHERE user_id = %s", (user_id,))
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys{where} ORDER BY id", params)
            return [key_from_row(row) for row in rows.fetchall()]

    # -- sessions ----------------------------------------------------------------------------
    def create_session(self, key: str, expires_at: float) -> tuple[str, Session] | None:
        if not looks_like_key(key):
            return None
        now = time.time()
        token = new_session_token()
        with self._db.write() as conn:
            # FOR SHARE: a revocation committed meanwhile waits for this session, then ends it.
            row = conn.execute(
                "SELECT id, user_id, expires_at FROM api_keys WHERE hash = %s "
                "AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > %s) FOR SHARE",
                (key_hash(key), now),
            ).fetchone()
            if row is None:
                return None
            key_id, user_id, key_expires = int(row[0]), int(row[1]), row[2]
            if key_expires is not None:
                expires_at = min(expires_at, float(key_expires))
            conn.execute("DELETE FROM sessions WHERE expires_at <= %s", (now,))  # sweep
            session_id = _returned_id(
                conn.execute(
                    "INSERT INTO sessions (key_id, hash, created_at, expires_at) "
                    "VALUES (%s, %s, %s, %s) RETURNING id",
                    (key_id, key_hash(token), now, expires_at),
                )
            )
        return token, Session(session_id, user_id, key_id, now, expires_at)

    def end_session(self, token: str) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM sessions WHERE hash = %s", (key_hash(token),))

    # -- audit -------------------------------------------------------------------------------
    def audit(self, actor: str, action: str, target: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO audit_log (at, actor, action, target) VALUES (%s, %s, %s, %s)",
                (time.time(), actor, action, target),
            )

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit_log ORDER BY id DESC LIMIT %s", (limit,)
            ).fetchall()
        return [audit_from_row(row) for row in rows]


def _returned_id(cursor: Any) -> int:
    row = cursor.fetchone()
    assert row is not None  # INSERT … RETURNING always returns the row
    return int(row[0])


def _team(row: Any) -> Team:
    return Team(int(row[0]), str(row[1]), float(row[2]))
