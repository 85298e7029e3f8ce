"""The SQLite read side of search: the lexical index (FTS5), vectors (in-memory matrices per
base and identity, reuse by content hash, identity switches) and chunk hydration."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from lorebase.store.base import Scored
from lorebase.store.records import document_list, kb_list
from lorebase.store.relational.vectors import VectorWritesMixin
from lorebase.store.sqlite import search, writes
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.rows import batches, placeholders
from lorebase.store.sqlite.schema import CONTENT_HASH_PREFIX
from lorebase.store.vectors import (
    blob_bytes,
    checked_query,
    from_blob,
    matrix_from_blobs,
)
from lorebase.types import EmbedderIdentity

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


class LexicalMixin(SqliteRole):
    """:class:`~lorebase.store.base.LexicalIndex` over the store's lexical engine (Tantivy or
    FTS5, :mod:`.lexical`)."""

    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        with self._read() as conn:
            return self._lexical.search(
                conn, kb_list(kb_ids), query, limit, document_list(document_ids)
            )

    def keyword_ceiling(self, kb_ids: Sequence[int], query: str) -> float:
        with self._read() as conn:
            return self._lexical.ceiling(conn, kb_list(kb_ids), query)

    def lexical_damage(self, kb_ids: Sequence[int]) -> dict[int, str]:
        return self._lexical.damaged(kb_list(kb_ids))


class VectorsMixin(VectorWritesMixin, SqliteRole):
    """:class:`~lorebase.store.base.Vectors` over SQLite blobs and in-memory indexes."""

    def dense_search(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        """Indexes are fetched (and reloaded when stale) under a lock of their own; the matrix
        products run outside it, so concurrent searches overlap."""
        query = checked_query(vector, identity)
        document_ids = document_list(document_ids)
        if limit <= 0 or not kb_ids or document_ids == []:
            return []
        with self._read() as conn, self._dense_lock:
            identity_id = writes.identity_row(self._dialect.bind(conn), identity, create=False)
            if not identity_id:
                return []
            indexes = self._dense.indexes_for(conn, kb_list(kb_ids), identity_id, identity.dim)
        return search.merge_top(
            [index.search(query, limit, document_ids) for index in indexes], limit
        )

    def dense_scores(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        chunk_ids: Sequence[str],
    ) -> dict[str, float]:
        """From the stored vectors, decoded as the in-memory indexes decode them (the same
        inner products)."""
        query = checked_query(vector, identity)
        wanted = list(dict.fromkeys(chunk_ids))
        if not kb_ids or not wanted:
            return {}
        ids: list[str] = []
        blobs: list[bytes] = []
        with self._read() as conn:
            identity_id = writes.identity_row(self._dialect.bind(conn), identity, create=False)
            if not identity_id:
                return {}
            for batch in batches(wanted):
                rows = conn.execute(
                    _CHUNK_VECTORS_SQL.format(placeholders(len(batch))),
                    (identity_id, *batch, json.dumps(kb_list(kb_ids))),
                )
                for chunk_id, blob in rows:
                    if len(blob) == blob_bytes(identity.dim):
                        ids.append(chunk_id)
                        blobs.append(blob)
        products = matrix_from_blobs(blobs, identity.dim) @ query
        return dict(zip(ids, (float(score) for score in products), strict=True))

    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Vectors of stored chunks with these contents, in any base: there is no second copy
        of them, so a vector is found while some chunk with its text keeps it (the pipeline
        looks up before it replaces a document's chunks, and a sync drops vanished files
        after the pass, so edits, copies and moves reuse their vectors)."""
        found: dict[str, np.ndarray] = {}
        with self._read() as conn:
            identity_id = writes.identity_row(self._dialect.bind(conn), identity, create=False)
            if not identity_id:
                return found
            for batch in batches(list(dict.fromkeys(content_hashes))):
                rows = conn.execute(_CACHED_VECTORS_SQL, (identity_id, json.dumps(batch)))
                for content_hash, blob in rows:
                    if blob is not None and len(blob) == blob_bytes(identity.dim):
                        found[content_hash] = from_blob(blob, identity.dim)
        return found
