"""The SQLite read side of search: the lexical index (FTS5), vectors (in-memory matrices per
base and identity, reuse by content hash, identity switches) and chunk hydration."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, NotFound
from lorebase.store.base import DocumentState, DocumentVectors, Scored, StoredChunk
from lorebase.store.records import KEYWORD_ONLY_WHERE, document_list, kb_list, stored_ids_of
from lorebase.store.relational import rows as relational
from lorebase.store.relational.dialect import Bound
from lorebase.store.sqlite import search, writes
from lorebase.store.sqlite.role import SqliteRole
from lorebase.store.sqlite.rows import batches, decompress_text, placeholders
from lorebase.store.sqlite.schema import CONTENT_HASH_PREFIX
from lorebase.store.vectors import (
    blob_bytes,
    checked_query,
    checked_vectors,
    from_blob,
    matrix_from_blobs,
)
from lorebase.types import Chunk

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


class VectorsMixin(SqliteRole):
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

    def add_vectors(
        self,
        kb_id: int,
        document_id: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbedderIdentity,
    ) -> None:
        matrix = checked_vectors(chunks, vectors, identity)
        assert matrix is not None
        with self._writing() as tx:
            _add_vectors(tx, kb_id, document_id, chunks, matrix, identity)
            self._changed(tx, kb_id, [document_id])

    def add_vectors_many(
        self, kb_id: int, documents: Sequence[DocumentVectors], identity: EmbedderIdentity
    ) -> list[str]:
        checked = [
            (d.document_id, d.chunks, checked_vectors(d.chunks, d.vectors, identity))
            for d in documents
        ]
        written: list[str] = []
        with self._writing() as tx:
            try:
                relational.require_identity(tx, kb_id, identity.key)
            except Conflict:  # the base moved on: these documents wait for the next pass
                return written
            for document_id, chunks, matrix in checked:
                assert matrix is not None
                try:
                    _add_vectors(tx, kb_id, document_id, chunks, matrix, identity)
                except (NotFound, Conflict):  # checked before anything is written
                    continue
                written.append(document_id)
            if written:
                self._changed(tx, kb_id, written)
        return written

    def count_keyword_only(self, kb_ids: Sequence[int]) -> int:
        with self._read() as conn:
            row = conn.execute(
                "SELECT count(*) FROM documents WHERE kb_id IN (SELECT value FROM json_each(?)) "
                f"AND {KEYWORD_ONLY_WHERE}",
                (json.dumps(kb_list(kb_ids)),),
            ).fetchone()
        return int(row[0])


def _add_vectors(
    tx: Bound,
    kb_id: int,
    document_id: str,
    chunks: Sequence[Chunk],
    matrix: np.ndarray,
    identity: EmbedderIdentity,
) -> None:
    """One document's vectors, and the document indexed; ``NotFound`` or ``Conflict`` (the
    chunks changed) before anything is written."""
    relational.load_document(tx, kb_id, document_id)
    present = tx.all("SELECT id FROM chunks WHERE document_id = ?", (document_id,))
    stored = stored_ids_of(document_id, chunks, (row[0] for row in present))
    writes.write_vectors(tx, document_id, stored, matrix, writes.identity_row(tx, identity))
    tx.execute(
        "UPDATE documents SET identity_key = ?, state = ?, updated_at = ? WHERE id = ?",
        (identity.key, str(DocumentState.INDEXED), time.time(), document_id),
    )


class ChunksMixin(SqliteRole):
    """:class:`~lorebase.store.base.Chunks` over SQLite."""

    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        with self._read() as conn:
            return search.get_chunks(conn, kb_list(kb_ids), list(chunk_ids))

    def chunk_documents(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> dict[str, str]:
        with self._read() as conn:
            return search.chunk_documents(conn, kb_list(kb_ids), list(chunk_ids))

    def neighbors(self, kb_ids: Sequence[int], chunk_id: str, window: int) -> list[StoredChunk]:
        with self._read() as conn:
            return search.neighbors(conn, kb_list(kb_ids), chunk_id, window)

    def matching_documents(
        self,
        kb_ids: Sequence[int],
        *,
        path_prefix: str | None = None,
        language: str | None = None,
    ) -> list[str]:
        with self._read() as conn:
            return search.matching_documents(conn, kb_list(kb_ids), path_prefix, language)

    def document_chunks(
        self, kb_id: int, document_id: str, start: int, limit: int
    ) -> list[StoredChunk]:
        with self._read() as conn:
            relational.load_document(self._dialect.bind(conn), kb_id, document_id)
            return search.document_chunks(conn, kb_id, document_id, start, limit)

    def document_text(self, kb_id: int, document_id: str) -> str:
        with self._read() as conn:
            row = conn.execute(
                "SELECT t.text FROM documents AS d "
                "LEFT JOIN document_texts AS t ON t.document_id = d.id "
                "WHERE d.id = ? AND d.kb_id = ?",
                (document_id, kb_id),
            ).fetchone()
        if row is None:
            raise NotFound(relational.NO_DOCUMENT)
        return decompress_text(row[0])
