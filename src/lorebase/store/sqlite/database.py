"""One SQLite file and its connections: the transactions every SQLite role runs in.

Transactions are explicit: the connections run in autocommit mode and every write is one
``BEGIN IMMEDIATE ... COMMIT`` (taking the write lock up front, so a writer waits on
``busy_timeout`` instead of failing half-way with SQLITE_BUSY on upgrade). Writes go through
one connection per database object, guarded by a lock; reads take a connection of their own
from a small pool, so searches run side by side with each other and with a write in progress
(WAL gives each read transaction its snapshot). Other processes share the file through WAL too.

The store and the accounts each apply their own migrations over one :class:`SqliteDatabase`
(or each over their own, on the same file): neither reaches into the other.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from lorebase.errors import DamagedText, Unavailable
from lorebase.store.document_text import chunk_text
from lorebase.store.relational.database import BaseDatabase
from lorebase.store.relational.dialect import Dialect
from lorebase.store.sqlite.fts import CHUNK_TEXT_FUNCTION

MIN_SQLITE = (3, 39, 0)
"""``RETURNING`` (3.35), ``IS NOT DISTINCT FROM`` (3.39): the SQL the relational store is
written in."""

BUSY_TIMEOUT_MS = 5000
PAGE_SIZE = 16384
"""Large rows pack better in 16 KB pages: ten 1.5 KB vectors (384 float32) per page instead of
two per 4 KB page (a quarter of it wasted), and ~1 KB chunk rows and compressed document texts
waste less at page ends. Measured at 10k chunks of 1000 characters with 384-d vectors: 6018
bytes per chunk on disk against 6858 with 4 KB pages; keyword and dense latency unchanged."""

IDLE_READERS = 8
"""Read connections kept open between uses; more are opened under load and closed after."""

log = logging.getLogger(__name__)
C = TypeVar("C", bound=sqlite3.Connection)


def _chunk_text_or_none(stored: str | bytes | None, chunk_id: object) -> str | None:
    """The SQL function ``chunk_text(text, id)`` every connection of this module has: a
    chunk's text from its stored value, compressed or not (see
    :func:`lorebase.store.document_text.chunk_text`). The keyword indexes read chunks through
    it (the FTS5 engine's source view, the Tantivy catch-up), so they never see compressed
    bytes. A value that does not decompress gives NULL (nothing indexed) and a warning naming
    the chunk, never its text, so one damaged row stops neither a rebuild nor the write that
    replaces it (reading the chunk itself raises ``DamagedText``). A view that calls it needs
    ``trusted_schema`` on (SQLite's default); a tool that opens the file without lorebase
    cannot read the FTS5 source view."""
    try:
        return chunk_text(stored, chunk_id)
    except DamagedText as damaged:
        log.warning("%s; the keyword index leaves its text out", damaged)
        return None


def _with_functions(conn: C) -> C:
    conn.create_function(CHUNK_TEXT_FUNCTION, 2, _chunk_text_or_none, deterministic=True)
    return conn


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with the store's pragmas.
    ``synchronous=NORMAL`` is durable across application crashes in WAL mode; only a power
    loss can drop the last commits."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # takes effect only for a new file
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return _with_functions(conn)


class ReaderConnection(sqlite3.Connection):
    """A connection for read transactions that keeps, while one is open, what it was told in
    it (``told``: see :func:`~lorebase.store.relational.dialect.once_a_snapshot`)."""

    told: dict[Hashable, Any] | None = None


def connect_reader(path: Path) -> ReaderConnection:
    """A connection for read transactions (and its own TEMP tables, such as the term-statistics
    cache of the keyword plan)."""
    conn = sqlite3.connect(
        path,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
        factory=ReaderConnection,
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return _with_functions(conn)


@contextmanager
def savepoint(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A savepoint inside the transaction: what is raised inside undoes only the block."""
    conn.execute("SAVEPOINT lorebase")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK TO lorebase")
        conn.execute("RELEASE lorebase")
        raise
    conn.execute("RELEASE lorebase")


DIALECT = Dialect(
    name="sqlite",
    pyformat=False,
    row_locks=False,
    id_lists="json",
    unique_violation=(sqlite3.IntegrityError,),
    savepoint=savepoint,
)


class SqliteDatabase(BaseDatabase):
    """One SQLite file: a writer connection under a lock and a pool of readers. Safe to share
    between threads; several processes (or several objects) may open the same file. ``name``:
    the file's path."""

    dialect = DIALECT

    def __init__(self, path: Path | str) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise Unavailable(
                f"lorebase needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; this Python "
                f"has {sqlite3.sqlite_version} (install a newer Python or pysqlite3)"
            )
        self.path = Path(path)
        self.name = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = connect(self.path)
        self._pool_lock = threading.Lock()
        self._idle: list[ReaderConnection] = []
        self._reading = threading.local()  # conn: the read transaction this thread is in

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; anything raised inside rolls all of it back."""
        with self._lock:
            self._check_open()
            with _transaction(self._conn, "BEGIN IMMEDIATE") as conn:
                yield conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction on a pooled connection: every statement inside sees the same
        snapshot, and neither waits for nor blocks a writer. A read inside a read on the same
        thread is part of it (:meth:`SqliteRole.snapshot`: a search's reads in one
        transaction)."""
        held: sqlite3.Connection | None = getattr(self._reading, "conn", None)
        if held is not None:
            yield held
            return
        conn = self._take_reader()
        try:
            with _transaction(conn, "BEGIN") as snapshot:
                self._reading.conn = snapshot
                conn.told = {}
                try:
                    yield snapshot
                finally:
                    self._reading.conn = None
                    conn.told = None
        finally:
            self._return_reader(conn)

    @contextmanager
    def schema(self) -> Iterator[sqlite3.Connection]:
        """The writer connection outside any transaction, for ``migrate`` (which runs one
        transaction per migration itself)."""
        with self._lock:
            self._check_open()
            yield self._conn

    @contextmanager
    def _closing(self) -> Iterator[None]:
        """Closing waits for the write in progress and takes the pool."""
        with self._lock, self._pool_lock:
            yield

    def _disconnect(self) -> None:
        self._conn.close()
        for conn in self._idle:
            conn.close()
        self._idle.clear()

    def _take_reader(self) -> ReaderConnection:
        with self._pool_lock:
            self._check_open()
            if self._idle:
                return self._idle.pop()
        return connect_reader(self.path)

    def _return_reader(self, conn: ReaderConnection) -> None:
        with self._pool_lock:
            reusable = not conn.in_transaction  # a failed rollback leaves it unusable
            if reusable and not self._closed and len(self._idle) < IDLE_READERS:
                self._idle.append(conn)
                return
        conn.close()


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
    conn.execute(begin)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
