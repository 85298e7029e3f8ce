"""One PostgreSQL database and its connections: the transactions every PostgreSQL role (the
store, the accounts, the blobs, the jobs, the events) runs in.

A pool of connections (``psycopg_pool``) in autocommit mode; every unit of work is an explicit
transaction: :meth:`PostgresDatabase.write` (read committed: writers lock what they change),
:meth:`PostgresDatabase.read` (repeatable read, read only: every statement inside sees one
snapshot, as SQLite's read transactions do). Many processes on many machines share one
database; nothing here is per process but the pool.

Opening checks the server is reachable and that the extensions lorebase needs (``vector``,
``unaccent``) exist, creating them when the role may; errors name the server (host, port,
database) but never the password.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lorebase.errors import InvalidInput, Unavailable
from lorebase.store.relational.database import BaseDatabase
from lorebase.store.relational.dialect import Dialect

EXTENSIONS = ("vector", "unaccent")
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
POOL_MAX = 8
CONNECT_TIMEOUT_SECONDS = 10


def redacted(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:
        return "postgresql://…"
    host = str(parts.get("host") or "localhost")
    port = parts.get("port") or 5432
    return f"postgresql://{parts.get('user') or ''}@{host}:{port}/{parts.get('dbname') or ''}"


def _configure(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def _savepoint(conn: Any) -> Any:
    return conn.transaction()


def dialect() -> Dialect:
    """PostgreSQL's :class:`Dialect` (psycopg imported when a database is opened, not before)."""
    from psycopg.errors import UniqueViolation

    return Dialect(
        name="postgresql",
        pyformat=True,
        row_locks=True,
        id_lists="any",
        unique_violation=(UniqueViolation,),
        savepoint=_savepoint,
        binary_order=' COLLATE "C"',
        text_holds_nul=False,
    )


class PostgresDatabase(BaseDatabase):
    """A pool of connections to one database. Safe to share between threads.

    ``schema``: keep lorebase's tables in this schema of the database (created if missing)
    instead of the default one — how an evaluation keeps an index of its own in the same
    database, unseen by every other surface."""

    def __init__(self, url: str, *, max_size: int = POOL_MAX, schema: str | None = None) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as error:
            raise Unavailable(
                "the PostgreSQL backend is not installed; run `pip install 'lorebase[postgres]'`"
            ) from error
        self.url = url
        self.name = redacted(url)
        self.dialect = dialect()
        self.schema = schema
        connect_options: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
        if schema is not None:
            if not SCHEMA_NAME.fullmatch(schema):
                raise InvalidInput("a schema name is lowercase letters, digits and underscores")
            connect_options["options"] = f"-c search_path={schema},public"
        self.connect_options = connect_options
        try:
            with psycopg.connect(url, autocommit=True, **connect_options) as conn:
                _ensure_extensions(conn, self.name)
                if schema is not None:
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        except psycopg.OperationalError as error:
            raise Unavailable(
                f"cannot reach the PostgreSQL database {self.name}; check that the server is "
                "running and the URL (LOREBASE_STORE or --store) is right"
            ) from error
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, **connect_options},
            configure=_configure,
            open=True,
            name="lorebase",
        )

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection in autocommit mode, outside any transaction (advisory locks,
        migrations that run their own transactions)."""
        self._check_open()
        with self._pool.connection() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Any]:
        """One read-committed transaction; anything raised inside rolls all of it back."""
        with self.connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def read(self) -> Iterator[Any]:
        """One repeatable-read, read-only transaction: one snapshot for every statement."""
        with self.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    def _disconnect(self) -> None:
        self._pool.close()


def _ensure_extensions(conn: Any, name: str) -> None:
    import psycopg

    present = {row[0] for row in conn.execute("SELECT extname FROM pg_extension")}
    for extension in EXTENSIONS:
        if extension in present:
            continue
        try:
            # Into public, never into an evaluation's schema first on the search path.
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension} WITH SCHEMA public")
        except psycopg.errors.InsufficientPrivilege as error:
            raise Unavailable(
                f"the PostgreSQL database {name} lacks the {extension!r} extension and this "
                f"role may not create it; ask its administrator to run "
                f"`CREATE EXTENSION {extension};` in that database"
            ) from error
        except psycopg.errors.UniqueViolation:
            pass  # another process created it at the same moment
