"""What every relational role of a store shares: its database (transactions, as
:class:`~.dialect.Bound` connections) and the hooks where the backends truly differ."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import numpy as np

from lorebase.store.base import NewDocument
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound, Dialect
from lorebase.types import Chunk, EmbedderIdentity


class Database(Protocol):
    """A backend's database: transactions on its raw connections, and its dialect."""

    @property
    def dialect(self) -> Dialect: ...

    def read(self) -> AbstractContextManager[Any]: ...

    def write(self) -> AbstractContextManager[Any]: ...


class RelationalRole:
    """Set up by the store's ``__init__``; the relational roles (``catalogue``,
    ``documents``, ``uploads``) use it, each backend's role implements the hooks."""

    _db: Database
    _document_extra: Mapping[str, object] = {}
    """Columns only this backend's ``documents`` has, with the value a new or rewritten
    document starts with."""

    @property
    def _dialect(self) -> Dialect:
        return self._db.dialect

    def _write(self) -> AbstractContextManager[Any]:
        """One write transaction on a raw connection (a backend's own SQL)."""
        return self._db.write()

    def _read(self) -> AbstractContextManager[Any]:
        """One read transaction (a snapshot) on a raw connection."""
        return self._db.read()

    @contextmanager
    def _writing(self) -> Iterator[Bound]:
        """One write transaction; anything raised inside rolls all of it back."""
        with self._write() as conn:
            yield self._dialect.bind(conn)

    @contextmanager
    def _reading(self) -> Iterator[Bound]:
        """One read transaction: every statement inside sees one snapshot."""
        with self._read() as conn:
            yield self._dialect.bind(conn)

    # -- where the backends differ -----------------------------------------------------------
    @abstractmethod
    def _identity_id(self, identity: EmbedderIdentity) -> int:
        """The id of an embedding identity, registered on first use (in a transaction of its
        own, before any vector of it is written)."""

    def _changed(
        self, tx: Bound, kb_id: int, documents: Sequence[str] = (), *, every_document: bool = False
    ) -> None:
        """A base's searchable rows changed in ``tx`` (the ``documents``' chunks or vectors,
        or every document's): what indexes kept beside the rows need to know. Nothing by
        default (indexes inside the database follow by themselves)."""

    def _purging(self, tx: Bound, column: str, value: object) -> None:
        """The chunks whose ``column`` (``document_id`` or ``kb_id``) is ``value`` are about to
        be deleted: drop what an index beside them keeps. Nothing by default."""

    def _forget(self, kb_id: int) -> None:
        """A deleted base, after its transaction committed: drop what is kept of it outside
        the database. Nothing by default."""

    def _serialise_upload(self, tx: Bound, kb_id: int, content_hash: str) -> None:
        """Make uploads of the same bytes to one base wait for each other (nothing where the
        database has one writer at a time)."""

    @abstractmethod
    def _delete_other_vectors(self, tx: Bound, kb_id: int, keep: int) -> None:
        """Delete a base's vectors of every identity but ``keep``."""

    @abstractmethod
    def _write_chunks(
        self,
        tx: Bound,
        kb_id: int,
        document_id: str,
        document: NewDocument,
        chunks: Sequence[Chunk],
    ) -> list[str]:
        """Sections and chunks (and their lexical rows, where they live in the database) of a
        document whose old ones are gone; the stored chunk ids, in chunk order."""

    @abstractmethod
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
        """One vector per chunk, replacing one it had under this identity."""

    # -- what the roles share ----------------------------------------------------------------
    def _purge(self, tx: Bound, document_id: str) -> None:
        """Delete a document's index rows, chunks (vectors cascade) and sections, in that
        order."""
        self._purging(tx, "document_id", document_id)
        tx.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        tx.execute("DELETE FROM sections WHERE document_id = ?", (document_id,))

    def _delete_documents(self, tx: Bound, kb_id: int, document_ids: Sequence[str]) -> list[str]:
        """Delete those of the documents that are in this base, with every row that belongs to
        them; returns the ids deleted."""
        ids = rows.in_base(tx, kb_id, document_ids)
        if not ids:
            return ids
        for document_id in ids:
            self._purging(tx, "document_id", document_id)
        dialect = tx.dialect
        for table, column in (("chunks", "document_id"), ("sections", "document_id")):
            tx.execute(f"DELETE FROM {table} WHERE {dialect.any_of(column)}", (dialect.ids(ids),))
        tx.execute(f"DELETE FROM documents WHERE {dialect.any_of('id')}", (dialect.ids(ids),))
        return ids
