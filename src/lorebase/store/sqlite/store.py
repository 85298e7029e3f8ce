"""The embedded store: one SQLite file (WAL) holding knowledge bases, documents, chunks and
vectors (int8 with a scale per vector, stored once), with a lexical index beside it (Tantivy,
:mod:`.lexical`) or inside it (FTS5).

:class:`SqliteStore` is the relational store (:mod:`lorebase.store.relational`: every role
written once) over one :class:`SqliteDatabase` (``database``: the connections and
transactions), with the lexical engine and the in-memory dense indexes;
:class:`~.role.SqliteRole` holds the hooks where SQLite differs.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from lorebase.store.relational.store import RelationalStore
from lorebase.store.restriction import RestrictionCache
from lorebase.store.sqlite import dense
from lorebase.store.sqlite.database import (
    BUSY_TIMEOUT_MS,
    IDLE_READERS,
    PAGE_SIZE,
    SqliteDatabase,
    connect,
    connect_reader,
)
from lorebase.store.sqlite.lexical import DEFAULT_LEXICAL, open_engine
from lorebase.store.sqlite.maintenance import SqliteMaintenance, raise_if_damaged
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.schema import migrate

__all__ = [
    "BUSY_TIMEOUT_MS",
    "IDLE_READERS",
    "PAGE_SIZE",
    "SqliteStore",
    "connect",
    "connect_reader",
]


class SqliteStore(SqliteRole, SqliteMaintenance, RelationalStore[SqliteDatabase]):
    """:class:`Store` over one SQLite file. Safe to share between threads (writes through one
    connection under a lock, reads through pooled connections); several processes may open
    the same file. ``database`` is public so that other SQLite-backed stores (the accounts)
    can share its connections and transactions."""

    def __init__(
        self, path: Path | str, *, lexical: str = DEFAULT_LEXICAL, follow_writes: bool = True
    ) -> None:
        """``follow_writes`` off: this process's writes do not wake a background catch-up of
        the keyword indexes (a server's answering process: its indexer writes the chunks and
        follows them; a search catches up what else changed)."""
        self.path = Path(path)
        try:
            self._db = SqliteDatabase(self.path)
        except sqlite3.DatabaseError as error:
            raise_if_damaged(self.path, error)
            raise
        try:
            with self._db.schema() as conn:
                migrate(conn)
                self._lexical = open_engine(
                    lexical, conn, self.path, self._db.read, follow=follow_writes
                )
        except BaseException as error:
            self._db.close()
            if isinstance(error, sqlite3.DatabaseError):
                raise_if_damaged(self.path, error)
            raise
        self._dense = dense.DenseIndexes()
        self._dense_lock = threading.Lock()
        self._restrictions = RestrictionCache()

    def _release(self) -> None:
        self._lexical.close()
        with self._dense_lock:
            closing, self._dense = self._dense, dense.DenseIndexes()
        closing.close()
