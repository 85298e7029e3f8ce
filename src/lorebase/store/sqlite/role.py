"""What every role of :class:`~lorebase.store.sqlite.store.SqliteStore` shares: the database
(its transactions), the in-memory dense indexes and the lexical engine. Each role is a mixin
over this base, one module per role (``catalogue``, ``documents``, ``uploads``, ``retrieval``)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lorebase.store.sqlite.database import SqliteDatabase
    from lorebase.store.sqlite.dense import DenseIndexes
    from lorebase.store.sqlite.lexical import LexicalEngine


class SqliteRole:
    """Set up by the store's ``__init__``; the roles only use them."""

    _db: SqliteDatabase
    _dense: DenseIndexes
    _dense_lock: threading.Lock
    _lexical: LexicalEngine

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; anything raised inside rolls all of it back. Once it
        commits, the lexical engine hears of it (an index beside the database follows)."""
        with self._db.write() as conn:
            yield conn
        self._lexical.written()

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """One read transaction (a snapshot) on a pooled connection."""
        return self._db.read()
