"""What every relational role of a store shares: its database (transactions, as
:class:`~.dialect.Bound` connections), the registration of embedding identities, and the hooks
where the backends truly differ: how chunks and vectors are written, what a write must tell
the indexes kept beside the rows, and the read side of the vector engine."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from lorebase.store.base import NewDocument, Scored
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound, Dialect
from lorebase.store.restriction import Restriction
from lorebase.types import Chunk, EmbedderIdentity


class Database(Protocol):
    """A backend's database: transactions on its raw connections, its dialect, and its name
    (for people: a file, or a URL without its password)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def name(self) -> str: ...

    def read(self) -> AbstractContextManager[Any]: ...

    def write(self) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...


class KeywordEngine(Protocol):
    """A backend's keyword arm (BM25), run inside the search's read transaction ``conn`` (the
    driver's connection) on arguments the relational roles checked: some bases, a limit
    above 0, no empty filter."""

    def search(
        self,
        conn: Any,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None,
        languages: Mapping[int, frozenset[str]],
    ) -> Scored:
        """``languages``: the analyses each base's passages were indexed with."""
        ...

    def ceiling(
        self, conn: Any, kb_ids: Sequence[int], query: str, languages: Mapping[int, frozenset[str]]
    ) -> float:
        """See :meth:`lorebase.store.base.LexicalIndex.keyword_ceiling`."""
        ...

    def damaged(self, kb_ids: Sequence[int]) -> dict[int, str]:
        """See :meth:`lorebase.store.base.LexicalIndex.lexical_damage`."""
        ...


@dataclass(frozen=True, slots=True)
class DocumentChunks:
    """A document's chunks as a backend's write hooks receive them: in chunk order, with the
    ids they are stored under (:func:`lorebase.store.stored_chunk_id`)."""

    kb_id: int
    document_id: str
    chunks: Sequence[Chunk]
    stored_ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class DenseQuery:
    """What a backend's vector engine is asked about, checked: a query vector (float32, of the
    identity's dimension, finite) against the vectors of a registered identity
    (``identity_id``) in some bases."""

    kb_ids: list[int]
    identity: EmbedderIdentity
    identity_id: int
    vector: np.ndarray


class RelationalRole:
    """Set up by the store's ``__init__``; the relational roles use it, each backend's role
    implements the hooks."""

    _db: Database
    _lexical: KeywordEngine
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

    def snapshot(self) -> AbstractContextManager[object]:
        """The reads inside, on this thread, each in a transaction of its own (PostgreSQL: one
        for all would hold a pooled connection while a search's question embeds); a backend
        where one is cheap and holds nothing others wait for makes them one (SQLite)."""
        return nullcontext()

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

    def _identity_id(self, identity: EmbedderIdentity) -> int:
        """The id of an embedding identity: looked up in a read (every document's write asks),
        registered the first time only, in a short write transaction of its own (see
        ``_registered``), before any vector of it is written and without a document's
        transaction waiting on it."""
        with self._reading() as tx:
            found = rows.identity_id(tx, identity)
        if found is not None:
            return found
        with self._writing() as tx:
            self._serialise_registration(tx)
            found = rows.identity_id(tx, identity)  # again: registered meanwhile?
            if found is not None:
                return found
            made = tx.one(
                "INSERT INTO identities (key, model, digest, transform, dim) "
                "VALUES (?, ?, ?, ?, ?) RETURNING id",
                (identity.key, identity.model, identity.digest, identity.transform, identity.dim),
            )
            self._registered(tx, int(made[0]), identity)
            return int(made[0])

    # -- where the backends differ -----------------------------------------------------------
    def _serialise_registration(self, tx: Bound) -> None:
        """Make registrations of identities wait for each other (nothing where the database
        has one writer at a time)."""

    def _registered(self, tx: Bound, identity_id: int, identity: EmbedderIdentity) -> None:
        """An identity was just registered in ``tx``: make what its vectors need. Nothing by
        default."""

    def _changed(
        self, tx: Bound, kb_id: int, documents: Sequence[str] = (), *, every_document: bool = False
    ) -> None:
        """A base's searchable rows changed in ``tx`` (the ``documents``' chunks or vectors,
        or every document's): what indexes kept beside the rows need to know. Nothing by
        default (indexes inside the database follow by themselves)."""

    def _restriction(
        self, tx: Bound, kb_ids: list[int], key: Hashable, resolve: Callable[[], Restriction]
    ) -> Restriction:
        """The documents a filter (``key``) leaves in these bases, from ``resolve`` — or, where
        the backend can tell that the bases have not changed since, as resolved before."""
        return resolve()

    def _known_documents(
        self, tx: Bound, kb_ids: Sequence[int], chunk_ids: Sequence[str]
    ) -> dict[str, str]:
        """The documents of those of ``chunk_ids`` (in these bases) the backend knows without
        reading the rows, as ``tx`` sees them; the rest are read. None by default."""
        return {}

    def _fields_changed(self, tx: Bound, kb_id: int) -> None:
        """Fields people set on a base's documents changed in ``tx`` (its searchable rows did
        not): what remembers a filter's documents needs to know. Nothing by default."""

    def _purging(self, tx: Bound, column: str, value: object) -> None:
        """The chunks whose ``column`` (``document_id`` or ``kb_id``) is ``value`` are about to
        be deleted: drop what an index beside them keeps. Nothing by default."""

    def _forget(self, kb_id: int) -> None:
        """A deleted base, after its transaction committed: drop what is kept of it outside
        the database. Nothing by default."""

    def _serialise_upload(self, tx: Bound, kb_id: int, content_hash: str) -> None:
        """Make uploads of the same bytes to one base wait for each other (nothing where the
        database has one writer at a time)."""

    def _cache_vectors(
        self, tx: Bound, identity_id: int, vectors: Mapping[str, np.ndarray]
    ) -> None:
        """Keep these vectors for reuse by content hash, where the backend keeps them apart
        from the chunks (nothing by default: the stored chunks are the cache). A batch's are
        cached first, in one order, before any of its documents' vectors are written."""

    @abstractmethod
    def _delete_other_vectors(self, tx: Bound, kb_id: int, keep: int) -> None:
        """Delete a base's vectors of every identity but ``keep``."""

    @abstractmethod
    def _write_chunks(self, tx: Bound, written: DocumentChunks, document: NewDocument) -> None:
        """Sections and chunks (and their lexical rows, where they live in the database) of
        ``document``, whose old ones are gone."""

    @abstractmethod
    def _write_vectors(
        self, tx: Bound, written: DocumentChunks, matrix: np.ndarray, identity_id: int
    ) -> None:
        """One vector per chunk (a row of ``matrix`` each, in chunk order), replacing one it
        had under this identity."""

    @abstractmethod
    def _dense_search(
        self, tx: Bound, query: DenseQuery, limit: int, document_ids: Sequence[str] | None
    ) -> Scored:
        """The best ``limit`` chunks by inner product (``limit`` above 0; ``document_ids``:
        only theirs, never an empty list), in ``tx``'s snapshot."""

    @abstractmethod
    def _dense_scores(self, tx: Bound, query: DenseQuery, chunk_ids: list[str]) -> dict[str, float]:
        """The inner products of these chunks (distinct ids, at least one) that have a vector
        of the identity, as :meth:`_dense_search` scores them."""

    @abstractmethod
    def _cached_vectors(
        self, tx: Bound, identity: EmbedderIdentity, identity_id: int, content_hashes: list[str]
    ) -> dict[str, np.ndarray]:
        """The vectors the backend finds for these content hashes (distinct, at least one)
        under a registered identity, as it stores them."""

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
        ids += rows.parts_within(tx, kb_id, ids)  # a file's parts go with it
        for document_id in ids:
            self._purging(tx, "document_id", document_id)
        dialect = tx.dialect
        for table, column in (("chunks", "document_id"), ("sections", "document_id")):
            tx.execute(f"DELETE FROM {table} WHERE {dialect.any_of(column)}", (dialect.ids(ids),))
        tx.execute(f"DELETE FROM documents WHERE {dialect.any_of('id')}", (dialect.ids(ids),))
        return ids
