"""What every role of :class:`~lorebase.store.sqlite.store.SqliteStore` shares: the database
(its transactions), the in-memory dense indexes and the lexical engine — and the hooks of the
relational roles (:mod:`lorebase.store.relational`) where SQLite differs: a base's generation
tells the indexes kept beside the rows what changed; FTS5 rows go with their chunks."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from lorebase.store.base import NewDocument
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import RelationalRole
from lorebase.store.sqlite import fts, writes
from lorebase.types import Chunk, EmbedderIdentity

if TYPE_CHECKING:
    from lorebase.store.sqlite.database import SqliteDatabase
    from lorebase.store.sqlite.dense import DenseIndexes
    from lorebase.store.sqlite.lexical import LexicalEngine


class SqliteRole(RelationalRole):
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

    # -- the relational hooks ----------------------------------------------------------------
    def _identity_id(self, identity: EmbedderIdentity) -> int:
        """Looked up in a read (every document's write asks); registered in a write the first
        time only."""
        with self._reading() as tx:
            found = writes.identity_row(tx, identity, create=False)
        if found:
            return found
        with self._writing() as tx:
            return writes.identity_row(tx, identity)

    def _changed(
        self, tx: Bound, kb_id: int, documents: Sequence[str] = (), *, every_document: bool = False
    ) -> None:
        writes.bump(tx, kb_id, documents, every_document=every_document)

    def _purging(self, tx: Bound, column: str, value: object) -> None:
        if fts.fts_present(tx.raw):
            tx.execute(fts.fts_delete_sql(column), (value,))

    def _forget(self, kb_id: int) -> None:
        with self._dense_lock:
            self._dense.forget({kb_id})
        self._lexical.forget(kb_id)

    def _delete_other_vectors(self, tx: Bound, kb_id: int, keep: int) -> None:
        tx.execute(
            "DELETE FROM vectors WHERE identity_id != ? AND chunk_rowid IN "
            "(SELECT rowid FROM chunks WHERE kb_id = ?)",
            (keep, kb_id),
        )

    def _write_chunks(
        self,
        tx: Bound,
        kb_id: int,
        document_id: str,
        document: NewDocument,
        chunks: Sequence[Chunk],
    ) -> list[str]:
        return writes.write_chunks(tx, kb_id, document_id, chunks)

    def _write_vectors(
        self,
        tx: Bound,
        kb_id: int,
        document_id: str,
        chunks: Sequence[Chunk],
        stored_ids: Sequence[str],
        matrix: np.ndarray,
        identity_id: int,
    ) -> None:
        writes.write_vectors(tx, document_id, stored_ids, matrix, identity_id)
