"""Numbered migrations for the PostgreSQL roles that keep their own tables (the accounts, the
blobs): each applied in its own transaction that also records it, in a table of the role's
own, under a transaction-level advisory lock of the role's own.

Many processes on many machines may open one database at the same moment: the advisory lock
(``pg_advisory_xact_lock``, released when the transaction ends) makes them take turns, and
each re-reads what is applied once it holds the lock, so every migration runs once. A
database already up to date is recognised without taking the lock. Never edit a released
migration: append a new one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lorebase.errors import Conflict
from lorebase.store.postgres.database import PostgresDatabase

_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True, slots=True)
class PgMigration:
    """One schema change: SQL statements run in order, in one transaction."""

    number: int
    name: str
    steps: tuple[str, ...]


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key derived from ``name`` (one per migrations table), so
    roles that share a database never wait for each other's migrations."""
    digest = hashlib.sha256(f"lorebase:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def migrate(
    database: PostgresDatabase, migrations: Sequence[PgMigration], *, table: str
) -> list[int]:
    """Apply the missing ``migrations`` of one role (recorded in ``table``) to the database of
    ``database`` (a ``PostgresDatabase``); returns the numbers this call applied."""
    if not _TABLE_NAME.fullmatch(table):
        raise ValueError(f"not a plain table name: {table!r}")
    known = max((m.number for m in migrations), default=0)
    wanted = {m.number for m in migrations}
    with database.read() as conn:
        applied = _applied(conn, table)
    _refuse_newer(applied, known, table)
    if wanted <= applied:
        return []  # the common case: no lock taken just to open
    done: list[int] = []
    for migration in sorted(migrations, key=lambda m: m.number):
        with database.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(table),))
            conn.execute(migrations_table_sql(table))
            applied = _applied(conn, table)  # again: another process may have migrated
            _refuse_newer(applied, known, table)
            if migration.number in applied:
                continue
            for step in migration.steps:
                conn.execute(step)
            conn.execute(
                f"INSERT INTO {table} (number, name) VALUES (%s, %s)",
                (migration.number, migration.name),
            )
            done.append(migration.number)
    return done


def migrations_table_sql(table: str) -> str:
    """The statement that makes a role's migrations table (when it is missing)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (number integer PRIMARY KEY, "
        "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )


def applied_migrations(database: PostgresDatabase, table: str) -> set[int]:
    """The numbers recorded in ``table`` (empty when it does not exist yet)."""
    with database.read() as conn:
        return _applied(conn, table)


def _applied(conn: Any, table: str) -> set[int]:
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
        return set()
    return {int(row[0]) for row in conn.execute(f"SELECT number FROM {table}")}


def _refuse_newer(applied: set[int], known: int, table: str) -> None:
    newer = sorted(n for n in applied if n > known)
    if newer:
        raise Conflict(
            f"this PostgreSQL database was migrated by a newer lorebase ({table} has migration "
            f"{newer[-1]}, this version knows up to {known}); upgrade lorebase on this machine"
        )
