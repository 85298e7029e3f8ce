"""Accounts in SQLite: their own tables and migrations (``schema.py``), over a
:class:`SqliteDatabase` they are given (the store's, to share its file, connections and
write lock) or open themselves."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

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
from lorebase.accounts.schema import migrate_accounts
from lorebase.errors import Conflict, NotFound
from lorebase.store.sqlite.database import SqliteDatabase

__all__ = ["HasDatabase", "SqliteAccounts", "key_hash"]


class HasDatabase(Protocol):
    """Something that holds a SQLite database, such as the ``SqliteStore``."""

    @property
    def database(self) -> SqliteDatabase: ...


class SqliteAccounts(ClosesOwned, AccountStore):
    """:class:`AccountStore` over SQLite. ``SqliteAccounts(store)`` shares the store's database
    (its file, connections and write lock; closing the store closes it);
    ``SqliteAccounts.open(path)`` opens a database of its own, closed by :meth:`close`. Either
    way the account migrations are applied first."""

    def __init__(self, database: SqliteDatabase | HasDatabase) -> None:
        self._db = database if isinstance(database, SqliteDatabase) else database.database
        self._owned = False
        with self._db.schema() as conn:
            migrate_accounts(conn)

    @classmethod
    def open(cls, path: Path | str) -> SqliteAccounts:
        database = SqliteDatabase(path)
        try:
            accounts = cls(database)
        except BaseException:
            database.close()
            raise
        accounts._owned = True
        return accounts

    def _close_database(self) -> None:
        self._db.close()

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.write()

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.read()

    # -- users and teams ---------------------------------------------------------------------
    def create_user(self, name: str, role: Role = Role.MEMBER) -> User:
        name = check_name(name, "user")
        now = time.time()
        with self._write() as conn:
            try:
                user_id = conn.execute(
                    "INSERT INTO users (name, role, created_at) VALUES (?, ?, ?)",
                    (name, str(Role(role)), now),
                ).lastrowid
            except sqlite3.IntegrityError:
                raise Conflict(f"a user named {name!r} already exists") from None
        assert user_id is not None  # an INSERT always sets it
        return User(user_id, name, Role(role), now)

    def get_user(self, name: str) -> User:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {USER_COLUMNS} FROM users WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            raise NotFound("no such user; `lorebase users list` shows them")
        return user_from_row(row)

    def list_users(self) -> list[User]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {USER_COLUMNS} FROM users ORDER BY name")
            return [user_from_row(row) for row in rows.fetchall()]

    def create_team(self, name: str) -> Team:
        name = check_name(name, "team")
        now = time.time()
        with self._write() as conn:
            try:
                team_id = conn.execute(
                    "INSERT INTO teams (name, created_at) VALUES (?, ?)", (name, now)
                ).lastrowid
            except sqlite3.IntegrityError:
                raise Conflict(f"a team named {name!r} already exists") from None
        assert team_id is not None  # an INSERT always sets it
        return Team(team_id, name, now)

    def get_team(self, name: str) -> Team:
        with self._read() as conn:
            row = conn.execute(
                "SELECT id, name, created_at FROM teams WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            raise NotFound("no such team; `lorebase teams list` shows them")
        return Team(*row)

    def list_teams(self) -> list[Team]:
        with self._read() as conn:
            rows = conn.execute("SELECT id, name, created_at FROM teams ORDER BY name")
            return [Team(*row) for row in rows.fetchall()]

    def set_member(self, team_id: int, user_id: int, role: Role | None) -> None:
        with self._write() as conn:
            if role is None:
                conn.execute(
                    "DELETE FROM team_members WHERE team_id = ? AND user_id = ?",
                    (team_id, user_id),
                )
                return
            conn.execute(
                "INSERT INTO team_members (team_id, user_id, role) VALUES (?, ?, ?) "
                "ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role",
                (team_id, user_id, str(Role(role))),
            )

    def memberships(self, user_id: int) -> dict[int, Role]:
        with self._read() as conn:
            rows = conn.execute(
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
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is None:
                raise NotFound("no such user")
            if parent_id is not None:
                parent = conn.execute(
                    "SELECT user_id, expires_at, revoked_at FROM api_keys WHERE id = ?",
                    (parent_id,),
                ).fetchone()
                expires_at = checked_parent(parent, user_id, expires_at, now)
            key_id = conn.execute(
                "INSERT INTO api_keys (user_id, prefix, hash, name, created_at, expires_at, "
                "parent_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user_id, made.prefix, made.hash, name, now, expires_at, parent_id),
            ).lastrowid
        assert key_id is not None  # an INSERT always sets it
        record = ApiKey(key_id, user_id, made.prefix, name, now, expires_at, None, None, parent_id)
        return made.key, record

    def resolve_credential(self, credential: str, *, session: bool) -> tuple[User, int] | None:
        params = credential_params(credential, session, time.time())
        if params is None:
            return None
        with self._read() as conn:
            row = conn.execute(credential_sql("?", session), params).fetchone()
        return credential_from_row(row)

    def revoke_key(self, key_id: int) -> None:
        with self._write() as conn:
            active = conn.execute(
                "SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL", (key_id,)
            ).fetchone()
            if active is None:
                raise NotFound("no such active key; `lorebase keys list` shows them")
            conn.execute(revoke_tree_sql("?"), (key_id, time.time()))

    def list_keys(self, user_id: int | None = None) -> list[ApiKey]:
        sql = f"SELECT {KEY_COLUMNS} FROM api_keys"
        params: Sequence[object] = ()
        if user_id is not None:
            sql, params = sql + " WHERE user_id = ?", (user_id,)
        with self._read() as conn:
            return [key_from_row(row) for row in conn.execute(sql + " ORDER BY id", params)]

    # -- sessions ----------------------------------------------------------------------------
    def create_session(self, key: str, expires_at: float) -> tuple[str, Session] | None:
        if not looks_like_key(key):
            return None
        now = time.time()
        token = new_session_token()
        with self._write() as conn:
            row = conn.execute(
                "SELECT id, user_id, expires_at FROM api_keys "
                "WHERE hash = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
                (key_hash(key), now),
            ).fetchone()
            if row is None:
                return None
            key_id, user_id, key_expires = int(row[0]), int(row[1]), row[2]
            if key_expires is not None:
                expires_at = min(expires_at, float(key_expires))
            conn.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))  # sweep
            session_id = conn.execute(
                "INSERT INTO sessions (key_id, hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
                (key_id, key_hash(token), now, expires_at),
            ).lastrowid
        assert session_id is not None  # an INSERT always sets it
        return token, Session(session_id, user_id, key_id, now, expires_at)

    def end_session(self, token: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM sessions WHERE hash = ?", (key_hash(token),))

    # -- audit -------------------------------------------------------------------------------
    def audit(self, actor: str, action: str, target: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO audit_log (at, actor, action, target) VALUES (?, ?, ?, ?)",
                (time.time(), actor, action, target),
            )

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {AUDIT_COLUMNS} FROM audit_log ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [audit_from_row(row) for row in rows]
