"""The accounts' SQLite schema: numbered migrations of their own, recorded in the table
``account_migrations`` (the store records its own in ``migrations``), so the accounts and the
index evolve apart even when they share one file.

A database made before the accounts had their own migrations already holds these tables
(the store's migration 4 used to create them): migration 1 creates each table only when it is
missing, so such a database keeps its users, teams, keys and audit log. Never edit a released
migration: append a new one.
"""

from __future__ import annotations

import sqlite3

from lorebase.accounts.common import ACCOUNT_MIGRATIONS_TABLE
from lorebase.store.sqlite.schema import Migration, Step, migrate

__all__ = ["ACCOUNT_MIGRATIONS", "ACCOUNT_MIGRATIONS_TABLE", "migrate_accounts"]

_ACCOUNT_TABLES: tuple[Step, ...] = (
    """CREATE TABLE IF NOT EXISTS users (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
        created_at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS teams (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS team_members (
        team_id INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
        PRIMARY KEY (team_id, user_id)
    )""",
    """CREATE TABLE IF NOT EXISTS api_keys (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        expires_at REAL,
        revoked_at REAL,
        last_used_at REAL
    )""",
    """CREATE TABLE IF NOT EXISTS audit_log (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL
    )""",
)

# Sign-in sessions of the web page: an API key exchanged for a cookie. Only the token's SHA-256
# is stored; a session lives no longer than its key (resolving one checks the key too).
_SESSIONS: tuple[Step, ...] = (
    """CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        key_id INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        hash TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL
    )""",
    "CREATE INDEX sessions_by_key ON sessions (key_id)",
)

# A key made with another (an API request's) records it: it ends no later, and with it.
_KEY_PARENTS: tuple[Step, ...] = (
    "ALTER TABLE api_keys ADD COLUMN parent_id INTEGER REFERENCES api_keys(id)",
    "CREATE INDEX api_keys_by_parent ON api_keys (parent_id)",
)

# Where an audited change came from: the client's address over HTTP, "cli" on the command line.
_AUDIT_CLIENTS: tuple[Step, ...] = (
    "ALTER TABLE audit_log ADD COLUMN client TEXT",
    "CREATE INDEX audit_log_by_time ON audit_log (at)",
)

# A user's own API key for a named HTTP embedder, sealed with the data key (never stored in
# the clear; lorebase.service.own_keys), used by their personal bases.
_EMBEDDER_KEYS: tuple[Step, ...] = (
    """CREATE TABLE user_embedder_keys (
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        embedder TEXT NOT NULL,
        sealed TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (user_id, embedder)
    )""",
)

ACCOUNT_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "users, teams, team members, API keys, audit log", _ACCOUNT_TABLES),
    Migration(2, "sign-in sessions exchanged for an API key", _SESSIONS),
    Migration(3, "the key each API key was made with", _KEY_PARENTS),
    Migration(4, "where each audited change came from", _AUDIT_CLIENTS),
    Migration(5, "users' own keys for HTTP embedders, sealed", _EMBEDDER_KEYS),
)


def migrate_accounts(
    conn: sqlite3.Connection, migrations: tuple[Migration, ...] = ACCOUNT_MIGRATIONS
) -> list[int]:
    """Apply the missing account migrations (see ``store.sqlite.schema.migrate``)."""
    return migrate(conn, migrations, table=ACCOUNT_MIGRATIONS_TABLE)
