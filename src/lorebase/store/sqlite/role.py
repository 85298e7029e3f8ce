"""What every role of :class:`~lorebase.store.sqlite.store.SqliteStore` shares: the database
(its transactions), the in-memory dense indexes and the lexical engine — and the hooks of the
relational roles (:mod:`lorebase.store.relational`) where SQLite differs: a base's generation
tells the indexes kept beside the rows what changed; FTS5 rows go with their chunks; vectors
are int8 blobs keyed by chunk row, searched in in-memory matrices and found again by content
among the stored chunks (there is no second copy of them)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from lorebase.store.base import NewDocument, Scored
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import DenseQuery, DocumentChunks, RelationalRole
from lorebase.store.restriction import Restriction, RestrictionCache
from lorebase.store.sqlite import fts, search, writes
from lorebase.store.sqlite.rows import batches, json_ids, placeholders
from lorebase.store.sqlite.schema import CONTENT_HASH_PREFIX
from lorebase.store.vectors import blob_bytes, from_blob, matrix_from_blobs
from lorebase.types import EmbedderIdentity

if TYPE_CHECKING:
    from lorebase.store.sqlite.database import SqliteDatabase
    from lorebase.store.sqlite.dense import DenseIndexes
    from lorebase.store.sqlite.lexical import LexicalEngine

_CHUNK_VECTORS_SQL = (
    "SELECT c.id, v.vector FROM chunks AS c "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    "WHERE c.id IN ({}) AND c.kb_id IN (SELECT value FROM json_each(?))"
)
"""The vectors of some chunks under one identity (parameters: identity, the ids, the bases)."""

_CACHED_VECTORS_SQL = (
    "SELECT w.value, (SELECT v.vector FROM chunks AS c "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    f"WHERE substr(c.content_hash, 1, {CONTENT_HASH_PREFIX}) = "
    f"substr(w.value, 1, {CONTENT_HASH_PREFIX}) AND c.content_hash = w.value LIMIT 1) "
    "FROM json_each(?) AS w"
)
"""One stored vector per wanted content hash, through the index on the hashes' prefix
(``chunks_content_hash``); ``LIMIT 1`` stops at the first chunk holding it, however many
copies of that text the bases hold."""


class SqliteRole(RelationalRole):
    """Set up by the store's ``__init__``; the roles only use them."""

    _db: SqliteDatabase
    _dense: DenseIndexes
    _dense_lock: threading.Lock
    _lexical: LexicalEngine
    _restrictions: RestrictionCache

    @contextmanager
    def snapshot(self) -> Iterator[object]:
        """One read transaction for the reads inside on this thread: one snapshot for all of
        them, and one ``BEGIN`` and ``COMMIT`` (a search reads ~8 times)."""
        with self._db.read():
            yield None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; anything raised inside rolls all of it back. Once it
        commits, the lexical engine hears of it (an index beside the database follows)."""
        with self._db.write() as conn:
            yield conn
        self._lexical.written()

    # -- the write side ----------------------------------------------------------------------
    def _changed(
        self, tx: Bound, kb_id: int, documents: Sequence[str] = (), *, every_document: bool = False
    ) -> None:
        writes.bump(tx, kb_id, documents, every_document=every_document)

    def _restriction(
        self, tx: Bound, kb_ids: list[int], key: Hashable, resolve: Callable[[], Restriction]
    ) -> Restriction:
        """Remembered while every base's generation and last change stay as they were (each
        write to a base bumps one or the other, whichever process wrote)."""
        version = tuple(
            tx.raw.execute(
                "SELECT id, generation, updated_at, created_at FROM knowledge_bases "
                "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
                (json_ids(kb_ids),),
            )
        )
        found = self._restrictions.get(key, version)
        if found is None:
            found = resolve()
            self._restrictions.put(key, version, found)
        return found

    def _fields_changed(self, tx: Bound, kb_id: int) -> None:
        writes.touch(tx, kb_id)

    def _purging(self, tx: Bound, column: str, value: object) -> None:
        if not fts.fts_present(tx.raw):
            return
        deleted = tx.execute(fts.fts_delete_sql(column), (value,)).rowcount
        if deleted < tx.one(fts.chunk_count_sql(column), (value,))[0]:
            # A damaged chunk (its text does not decompress) cannot be deleted from the index
            # by value: the chunks go now (they were about to) and the index is built again
            # from the rows left, so a chunk that reuses its rowid inherits nothing.
            tx.execute(f"DELETE FROM chunks WHERE {column} = ?", (value,))
            tx.execute(fts.rebuild_fts_sql())

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

    def _write_chunks(self, tx: Bound, written: DocumentChunks, document: NewDocument) -> None:
        writes.write_chunks(tx, written.kb_id, written.document_id, written.chunks)

    def _write_vectors(
        self, tx: Bound, written: DocumentChunks, matrix: np.ndarray, identity_id: int
    ) -> None:
        writes.write_vectors(tx, written, matrix, identity_id)

    # -- the read side of the vectors --------------------------------------------------------
    def _dense_search(
        self, tx: Bound, query: DenseQuery, limit: int, document_ids: Sequence[str] | None
    ) -> Scored:
        """Indexes are fetched (and reloaded when stale) under a lock of their own; the matrix
        products run outside it, so concurrent searches overlap."""
        with self._dense_lock:
            indexes = self._dense.indexes_for(
                tx.raw, query.kb_ids, query.identity_id, query.identity.dim
            )
        return search.merge_top(
            [index.search(query.vector, limit, document_ids) for index in indexes], limit
        )

    def _known_documents(
        self, tx: Bound, kb_ids: Sequence[int], chunk_ids: Sequence[str]
    ) -> dict[str, str]:
        """From the in-memory exact indexes current to ``tx``'s snapshot (a search's dense arm
        has just brought them there): ~60 us for a search's candidates, against ~0.35 ms of
        index lookups in the database."""
        with self._dense_lock:
            return self._dense.documents_of(tx.raw, kb_ids, chunk_ids)

    def _dense_scores(self, tx: Bound, query: DenseQuery, chunk_ids: list[str]) -> dict[str, float]:
        """From the in-memory exact indexes (the vectors of the chunks they hold), the rest
        from the stored vectors, decoded as the in-memory indexes decode them (the same inner
        products)."""
        with self._dense_lock:
            indexes = self._dense.indexes_for(
                tx.raw, query.kb_ids, query.identity_id, query.identity.dim
            )
        scores: dict[str, float] = {}
        unread = False
        for index in indexes:
            found = index.scores_of(query.vector, chunk_ids)
            unread = unread or found is None
            scores.update(found or {})
        if unread or len(indexes) < len(query.kb_ids):  # an ANN index, or a base not loaded
            rest = [chunk_id for chunk_id in chunk_ids if chunk_id not in scores]
            scores.update(self._stored_scores(tx, query, rest) if rest else {})
        return scores

    def _stored_scores(
        self, tx: Bound, query: DenseQuery, chunk_ids: list[str]
    ) -> dict[str, float]:
        dim = query.identity.dim
        ids: list[str] = []
        blobs: list[bytes] = []
        for batch in batches(chunk_ids):
            rows = tx.raw.execute(
                _CHUNK_VECTORS_SQL.format(placeholders(len(batch))),
                (query.identity_id, *batch, json.dumps(query.kb_ids)),
            )
            for chunk_id, blob in rows:
                if len(blob) == blob_bytes(dim):
                    ids.append(chunk_id)
                    blobs.append(blob)
        products = matrix_from_blobs(blobs, dim) @ query.vector
        return dict(zip(ids, (float(score) for score in products), strict=True))

    def _cached_vectors(
        self, tx: Bound, identity: EmbedderIdentity, identity_id: int, content_hashes: list[str]
    ) -> dict[str, np.ndarray]:
        """Vectors of stored chunks with these contents, in any base: a vector is found while
        some chunk with its text keeps it (the pipeline looks up before it replaces a
        document's chunks, and a sync drops vanished files after the pass, so edits, copies
        and moves reuse their vectors)."""
        found: dict[str, np.ndarray] = {}
        for batch in batches(content_hashes):
            rows = tx.raw.execute(_CACHED_VECTORS_SQL, (identity_id, json.dumps(list(batch))))
            for content_hash, blob in rows:
                if blob is not None and len(blob) == blob_bytes(identity.dim):
                    found[content_hash] = from_blob(blob, identity.dim)
        return found
