"""What every role of :class:`~lorebase.store.postgres.store.PostgresStore` shares: the
database (its transactions) and the hooks of the relational roles
(:mod:`lorebase.store.relational`) where PostgreSQL differs: identities registered with their
HNSW index, uploads and registrations serialised by advisory locks, chunks written with their
lexemes, half-precision vectors with a reuse cache, dense search through pgvector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lorebase.store.base import NewDocument, Scored
from lorebase.store.postgres import dense, search, writes
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import DenseQuery, DocumentChunks, RelationalRole
from lorebase.store.vectors import VECTOR_DTYPE
from lorebase.types import EmbedderIdentity

if TYPE_CHECKING:
    from lorebase.store.postgres.database import PostgresDatabase

IDENTITY_LOCK = 0x6C62_6964  # "lbid": registering an identity (and making its index)


class PostgresRole(RelationalRole):
    """Set up by the store's ``__init__``; the roles only use them. Writes are read-committed
    transactions, reads repeatable-read snapshots (see :class:`PostgresDatabase`). Nothing is
    kept beside the rows, so the relational hooks ``_changed``, ``_purging`` and ``_forget``
    do nothing here: the lexemes are a column of the chunks, the vectors cascade with them."""

    _db: PostgresDatabase
    _lexical: search.FullText
    exact_search_rows: int
    _document_extra: Mapping[str, object] = {"lexical_tokens": 0}

    # -- the write side ----------------------------------------------------------------------
    def _serialise_registration(self, tx: Bound) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(?)", (IDENTITY_LOCK,))

    def _registered(self, tx: Bound, identity_id: int, identity: EmbedderIdentity) -> None:
        """The identity's partial HNSW index, made once, before any vector of it is written."""
        index = dense.create_index_sql(identity_id, identity.dim)
        if index is not None:
            tx.raw.execute(index)

    def _serialise_upload(self, tx: Bound, kb_id: int, content_hash: str) -> None:
        """An advisory lock on (base, content hash) for the transaction."""
        tx.execute(
            "SELECT pg_advisory_xact_lock(?, hashtext(?))",
            (writes.UPLOAD_LOCK, f"{kb_id}:{content_hash}"),
        )

    def _delete_other_vectors(self, tx: Bound, kb_id: int, keep: int) -> None:
        tx.execute("DELETE FROM vectors WHERE kb_id = ? AND identity_id <> ?", (kb_id, keep))

    def _write_chunks(self, tx: Bound, written: DocumentChunks, document: NewDocument) -> None:
        """The chunks with their lexemes, and the document's lexical token total (what BM25's
        average length is kept from)."""
        tokens = writes.write_chunks(tx.raw, written, document)
        tx.execute(
            "UPDATE documents SET lexical_tokens = ? WHERE id = ?", (tokens, written.document_id)
        )

    def _cache_vectors(
        self, tx: Bound, identity_id: int, vectors: Mapping[str, np.ndarray]
    ) -> None:
        """Into the reuse cache, which outlives the chunks (see :func:`writes.cache_vectors`)."""
        writes.cache_vectors(tx.raw, identity_id, vectors)

    def _write_vectors(
        self, tx: Bound, written: DocumentChunks, matrix: np.ndarray, identity_id: int
    ) -> None:
        writes.write_vectors(tx.raw, written, matrix, identity_id)

    # -- the read side of the vectors --------------------------------------------------------
    def _dense_search(
        self, tx: Bound, query: DenseQuery, limit: int, document_ids: Sequence[str] | None
    ) -> Scored:
        return search.dense_search(
            tx.raw,
            query.kb_ids,
            query.identity_id,
            query.identity.dim,
            query.vector,
            limit,
            document_ids,
            exact_rows=self.exact_search_rows,
        )

    def _dense_scores(self, tx: Bound, query: DenseQuery, chunk_ids: list[str]) -> dict[str, float]:
        return search.dense_scores(tx.raw, query.kb_ids, query.identity_id, query.vector, chunk_ids)

    def _cached_vectors(
        self, tx: Bound, identity: EmbedderIdentity, identity_id: int, content_hashes: list[str]
    ) -> dict[str, np.ndarray]:
        """From the reuse cache, in full precision (it outlives the chunks)."""
        rows = tx.all(
            "SELECT content_hash, vector FROM embedding_cache WHERE identity_id = ? "
            f"AND {tx.dialect.any_of('content_hash')}",
            (identity_id, tx.dialect.ids(content_hashes)),
        )
        found: dict[str, np.ndarray] = {}
        for content_hash, stored in rows:
            array = np.asarray(stored.to_numpy(), dtype=VECTOR_DTYPE)  # a pgvector Vector
            if array.shape == (identity.dim,):
                found[str(content_hash)] = array
        return found
