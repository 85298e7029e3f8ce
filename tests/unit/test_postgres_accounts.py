"""PostgreSQL accounts shared by many processes: what one process makes or revokes, every other
sees at once; processes that start together apply each account migration once.

Two ``PostgresDatabase`` pools on one database stand in for two processes (on two machines):
they share nothing but the database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from lorebase.accounts.postgres import PostgresAccounts
from lorebase.accounts.postgres_schema import (
    ACCOUNT_MIGRATIONS,
    ACCOUNT_MIGRATIONS_TABLE,
    migrate_accounts,
)
from lorebase.errors import Conflict
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.migrator import (
    PgMigration,
    applied_migrations,
    lock_key,
    migrations_table_sql,
)
from waiting import wait_until

WAIT_SECONDS = 30.0


@pytest.fixture
def two(postgres_url: str) -> Iterator[tuple[PostgresAccounts, PostgresAccounts]]:
    first, second = PostgresAccounts.open(postgres_url), PostgresAccounts.open(postgres_url)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def test_keys_sessions_and_revocations_are_seen_by_every_process(
    two: tuple[PostgresAccounts, PostgresAccounts],
) -> None:
    here, there = two
    dana = here.create_user("dana")
    assert there.get_user("dana") == dana
    key, record = here.create_key(dana.id, "laptop")
    assert there.resolve_key(key) == dana
    made = there.create_session(key, time.time() + 600)  # signed in through the other one
    assert made is not None
    token, _ = made
    assert here.resolve_session(token) == dana
    here.end_session(token)  # signing out here ends it there
    assert there.resolve_session(token) is None
    again = here.create_session(key, time.time() + 600)
    assert again is not None
    assert there.resolve_session(again[0]) == dana
    there.revoke_key(record.id)  # revoked there: refused here at once, sessions too
    assert here.resolve_key(key) is None
    assert here.resolve_session(again[0]) is None
    assert here.create_session(key, time.time() + 600) is None
    with pytest.raises(Conflict):
        there.create_user("dana")
    here.audit("cli", "revoke_key", f"key:{record.id}")
    assert [e.action for e in there.audit_log()] == ["revoke_key"]


def test_processes_starting_together_apply_each_migration_once(postgres_url: str) -> None:
    racers = 6
    barrier = threading.Barrier(racers)
    databases = [PostgresDatabase(postgres_url) for _ in range(racers)]

    def start(database: PostgresDatabase) -> list[int]:
        barrier.wait(timeout=WAIT_SECONDS)
        return migrate_accounts(database)

    try:
        with ThreadPoolExecutor(racers) as pool:
            applied = list(pool.map(start, databases))
        numbers = [m.number for m in ACCOUNT_MIGRATIONS]
        assert sorted(n for done in applied for n in done) == numbers  # each once, in all
        with databases[0].read() as conn:
            rows = conn.execute(f"SELECT number FROM {ACCOUNT_MIGRATIONS_TABLE} ORDER BY 1")
            assert [row[0] for row in rows] == numbers
        for database in databases:  # every one of them works
            PostgresAccounts(database).list_users()
    finally:
        for database in databases:
            database.close()


def _waiting_for_advisory_lock(database: PostgresDatabase) -> bool:
    with database.read() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return bool(row[0])


def test_a_process_waits_for_the_lock_then_finds_the_work_done(postgres_url: str) -> None:
    """Another process holds the accounts' migration lock and migrates: this one waits for it,
    then re-reads what is applied and applies nothing twice."""
    holder, waiter = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    result: list[list[int]] = []
    try:
        with holder.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(ACCOUNT_MIGRATIONS_TABLE),))
            thread = threading.Thread(target=lambda: result.append(migrate_accounts(waiter)))
            thread.start()
            wait_until(
                lambda: _waiting_for_advisory_lock(holder),
                WAIT_SECONDS,
                what="the second process to wait for the lock",
            )
            conn.execute(migrations_table_sql(ACCOUNT_MIGRATIONS_TABLE))
            for migration in ACCOUNT_MIGRATIONS:  # the holder migrates, as migrate would
                for step in migration.steps:
                    conn.execute(step)
                conn.execute(
                    f"INSERT INTO {ACCOUNT_MIGRATIONS_TABLE} (number, name) VALUES (%s, %s)",
                    (migration.number, migration.name),
                )
        thread.join(WAIT_SECONDS)
        assert result == [[]]
        assert applied_migrations(waiter, ACCOUNT_MIGRATIONS_TABLE) == {
            m.number for m in ACCOUNT_MIGRATIONS
        }
    finally:
        holder.close()
        waiter.close()


def test_the_accounts_lock_is_their_own() -> None:
    assert lock_key(ACCOUNT_MIGRATIONS_TABLE) != lock_key("store_migrations")
    assert lock_key(ACCOUNT_MIGRATIONS_TABLE) != lock_key("blob_migrations")


def test_a_database_migrated_by_a_newer_lorebase_is_refused(postgres_url: str) -> None:
    database = PostgresDatabase(postgres_url)
    try:
        newer = (*ACCOUNT_MIGRATIONS, PgMigration(99, "from the future", ("SELECT 1",)))
        assert migrate_accounts(database, newer) == [m.number for m in ACCOUNT_MIGRATIONS] + [99]
        with pytest.raises(Conflict, match="newer lorebase"):
            PostgresAccounts(database)
    finally:
        database.close()
