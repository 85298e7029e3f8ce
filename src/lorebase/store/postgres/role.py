"""What every role of :class:`~lorebase.store.postgres.store.PostgresStore` shares: the
database (its transactions) and the registration of embedding identities. Each role is a
mixin over this base, one module per role (``catalogue``, ``documents``, ``uploads``,
``retrieval``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from lorebase.store.base import NewDocument
from lorebase.store.postgres import dense, writes
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import RelationalRole
from lorebase.types import Chunk

if TYPE_CHECKING:
    from lorebase.store.postgres.database import PostgresDatabase
    from lorebase.store.postgres.lexical import Ranking
    from lorebase.types import EmbedderIdentity

IDENTITY_LOCK = 0x6C62_6964  # "lbid": registering an identity (and making its index)


class PostgresRole(RelationalRole):
    """Set up by the store's ``__init__``; the roles only use them. Writes are read-committed
    transactions, reads repeatable-read snapshots (see :class:`PostgresDatabase`). Nothing is
    kept beside the rows, so the relational hooks ``_changed``, ``_purging`` and ``_forget``
    do nothing here: the lexemes are a column of the chunks, the vectors cascade with them."""

    _db: PostgresDatabase
    _ranking: Ranking
    exact_search_rows: int
    _document_extra: Mapping[str, object] = {"lexical_tokens": 0}

    def _identity_id(self, identity: EmbedderIdentity) -> int:
        """The id of an identity, registered (with its HNSW index) on first use, in a short
        transaction of its own: the index is made once, before any vector of it is written,
        and no document's transaction waits on it."""
        with self._read() as conn:
            found = lookup_identity(conn, identity)
        if found is not None:
            return found
        with self._registering() as conn:
            found = lookup_identity(conn, identity)
            if found is not None:
                return found
            row = conn.execute(
                "INSERT INTO identities (key, model, digest, transform, dim) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (identity.key, identity.model, identity.digest, identity.transform, identity.dim),
            ).fetchone()
            identity_id = int(row[0])
            index = dense.create_index_sql(identity_id, identity.dim)
            if index is not None:
                conn.execute(index)
            return identity_id

    def _serialise_upload(self, tx: Bound, kb_id: int, content_hash: str) -> None:
        """An advisory lock on (base, content hash) for the transaction."""
        tx.execute(
            "SELECT pg_advisory_xact_lock(?, hashtext(?))",
            (writes.UPLOAD_LOCK, f"{kb_id}:{content_hash}"),
        )

    def _delete_other_vectors(self, tx: Bound, kb_id: int, keep: int) -> None:
        tx.execute("DELETE FROM vectors WHERE kb_id = ? AND identity_id <> ?", (kb_id, keep))

    def _write_chunks(
        self,
        tx: Bound,
        kb_id: int,
        document_id: str,
        document: NewDocument,
        chunks: Sequence[Chunk],
    ) -> list[str]:
        """The chunks with their lexemes, and the document's lexical token total (what BM25's
        average length is kept from)."""
        stored_ids, tokens = writes.write_chunks(tx.raw, kb_id, document_id, document, chunks)
        tx.execute("UPDATE documents SET lexical_tokens = ? WHERE id = ?", (tokens, document_id))
        return stored_ids

    def _cache_vectors(
        self, tx: Bound, identity_id: int, vectors: Mapping[str, np.ndarray]
    ) -> None:
        """Into the reuse cache, which outlives the chunks (see :func:`writes.cache_vectors`)."""
        writes.cache_vectors(tx.raw, identity_id, vectors)

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
        writes.write_vectors(tx.raw, kb_id, document_id, chunks, stored_ids, matrix, identity_id)

    @contextmanager
    def _registering(self) -> Iterator[Any]:
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (IDENTITY_LOCK,))
            yield conn


def lookup_identity(conn: Any, identity: EmbedderIdentity) -> int | None:
    row = conn.execute("SELECT id FROM identities WHERE key = %s", (identity.key,)).fetchone()
    return None if row is None else int(row[0])
