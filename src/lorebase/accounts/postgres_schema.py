"""The accounts' PostgreSQL schema: numbered migrations of their own, recorded in the table
``account_migrations`` and applied under an advisory lock of their own (see
``store.postgres.migrator``), so the accounts and the store evolve apart in one database.

Times are epoch seconds (``double precision``), as in SQLite: the records carry floats and
expiry is judged by the caller's clock. Never edit a released migration: append a new one.
"""

from __future__ import annotations

from lorebase.accounts.common import ACCOUNT_MIGRATIONS_TABLE
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.migrator import PgMigration, migrate

__all__ = ["ACCOUNT_MIGRATIONS", "ACCOUNT_MIGRATIONS_TABLE", "migrate_accounts"]

_ACCOUNT_TABLES = (
    """CREATE TABLE users (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE,
        role text NOT NULL CHECK (role IN ('admin', 'member')),
        created_at double precision NOT NULL
    )""",
    """CREATE TABLE teams (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created_at double precision NOT NULL
    )""",
    """CREATE TABLE team_members (
        team_id bigint NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('admin', 'member')),
        PRIMARY KEY (team_id, user_id)
    )""",
    "CREATE INDEX team_members_by_user ON team_members (user_id)",
    """CREATE TABLE api_keys (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        prefix text NOT NULL,
        hash text NOT NULL UNIQUE,
        name text NOT NULL DEFAULT '',
        created_at double precision NOT NULL,
        expires_at double precision,
        revoked_at double precision,
        last_used_at double precision
    )""",
    "CREATE INDEX api_keys_by_user ON api_keys (user_id)",
    """CREATE TABLE audit_log (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at double precision NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        target text NOT NULL
    )""",
)

# Sign-in sessions: only the token's SHA-256 is stored; a session lives no longer than its key.
_SESSIONS = (
    """CREATE TABLE sessions (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        hash text NOT NULL UNIQUE,
        created_at double precision NOT NULL,
        expires_at double precision NOT NULL
    )""",
    "CREATE INDEX sessions_by_key ON sessions (key_id)",
    "CREATE INDEX sessions_by_expiry ON sessions (expires_at)",
)

# A key made with another (an API request's) records it: it ends no later, and with it.
_KEY_PARENTS = (
    "ALTER TABLE api_keys ADD COLUMN parent_id bigint REFERENCES api_keys(id)",
    "CREATE INDEX api_keys_by_parent ON api_keys (parent_id)",
)

# Where a change came from (the client's address, or "cli"); the log read newest first by time.
_AUDIT_CLIENTS = (
    "ALTER TABLE audit_log ADD COLUMN client text",
    "CREATE INDEX audit_log_at ON audit_log (at)",
)

# As SQLite's migration 5: users' own embedder keys, sealed with the data key.
_EMBEDDER_KEYS = (
    """CREATE TABLE user_embedder_keys (
        user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        embedder text COLLATE "C" NOT NULL,
        sealed text NOT NULL,
        created_at double precision NOT NULL,
        PRIMARY KEY (user_id, embedder)
    )""",
)

ACCOUNT_MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(1, "users, teams, team members, API keys, audit log", _ACCOUNT_TABLES),
    PgMigration(2, "sign-in sessions exchanged for an API key", _SESSIONS),
    PgMigration(3, "the key each API key was made with", _KEY_PARENTS),
    PgMigration(4, "where each audited change came from", _AUDIT_CLIENTS),
    PgMigration(5, "users' own keys for HTTP embedders, sealed", _EMBEDDER_KEYS),
)


def migrate_accounts(
    database: PostgresDatabase, migrations: tuple[PgMigration, ...] = ACCOUNT_MIGRATIONS
) -> list[int]:
    """Apply the missing account migrations to a ``PostgresDatabase``; returns those applied."""
    return migrate(database, migrations, table=ACCOUNT_MIGRATIONS_TABLE)
