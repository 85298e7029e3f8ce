"""The PostgreSQL read side of search: the lexical index, vectors (search, the reuse cache,
identity switches) and chunk hydration."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, NotFound
from lorebase.store.base import DocumentState, DocumentVectors, Scored, StoredChunk
from lorebase.store.postgres import search, writes
from lorebase.store.postgres.role import PostgresRole, lookup_identity
from lorebase.store.records import (
    KEYWORD_ONLY_WHERE,
    decompress_text,
    document_list,
    kb_list,
    stored_ids_of,
)
from lorebase.store.relational import rows as relational
from lorebase.store.relational.dialect import Bound
from lorebase.store.vectors import VECTOR_DTYPE, checked_query, checked_vectors
from lorebase.types import Chunk


class LexicalMixin(PostgresRole):
    """:class:`~lorebase.store.base.LexicalIndex` over PostgreSQL full-text search."""

    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        with self._read() as conn:
            return search.keyword_search(
                conn, kb_list(kb_ids), query, limit, document_list(document_ids), self._ranking
            )

    def keyword_ceiling(self, kb_ids: Sequence[int], query: str) -> float:
        with self._read() as conn:
            return search.keyword_ceiling(conn, kb_list(kb_ids), query)

    def lexical_damage(self, kb_ids: Sequence[int]) -> dict[int, str]:
        """PostgreSQL's full-text index is part of the database: nothing of its own."""
        return {}


class VectorsMixin(PostgresRole):
    """:class:`~lorebase.store.base.Vectors` over pgvector."""

    def dense_search(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        query = checked_query(vector, identity)
        documents = document_list(document_ids)
        if limit <= 0 or not kb_ids or documents == []:
            return []
        with self._read() as conn:
            identity_id = lookup_identity(conn, identity)
            if identity_id is None:
                return []
            return search.dense_search(
                conn,
                kb_list(kb_ids),
                identity_id,
                identity.dim,
                query,
                limit,
                documents,
                exact_rows=self.exact_search_rows,
            )

    def dense_scores(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        chunk_ids: Sequence[str],
    ) -> dict[str, float]:
        query = checked_query(vector, identity)
        if not kb_ids or not chunk_ids:
            return {}
        with self._read() as conn:
            identity_id = lookup_identity(conn, identity)
            if identity_id is None:
                return {}
            return search.dense_scores(conn, kb_list(kb_ids), identity_id, query, chunk_ids)

    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(content_hashes))
        if not wanted:
            return {}
        with self._read() as conn:
            identity_id = lookup_identity(conn, identity)
            if identity_id is None:
                return {}
            rows = conn.execute(
                "SELECT content_hash, vector FROM embedding_cache WHERE identity_id = %s "
                "AND content_hash = ANY(%s)",
                (identity_id, wanted),
            ).fetchall()
        found: dict[str, np.ndarray] = {}
        for content_hash, stored in rows:
            array = np.asarray(stored.to_numpy(), dtype=VECTOR_DTYPE)  # a pgvector Vector
            if array.shape == (identity.dim,):
                found[str(content_hash)] = array
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
        with self._read() as conn:
            relational.load_document(
                self._dialect.bind(conn), kb_id, document_id
            )  # NotFound before registering
        identity_id = self._identity_id(identity)
        with self._write() as conn:
            relational.lock_kb(self._dialect.bind(conn), kb_id)
            _add_vectors(
                self._dialect.bind(conn), kb_id, document_id, chunks, matrix, identity, identity_id
            )

    def add_vectors_many(
        self, kb_id: int, documents: Sequence[DocumentVectors], identity: EmbedderIdentity
    ) -> list[str]:
        checked = [
            (d.document_id, d.chunks, checked_vectors(d.chunks, d.vectors, identity))
            for d in documents
        ]
        if not checked:
            return []
        identity_id = self._identity_id(identity)
        written: list[str] = []
        with self._write() as conn:
            relational.lock_kb(self._dialect.bind(conn), kb_id)
            try:
                relational.require_identity(self._dialect.bind(conn), kb_id, identity.key)
            except Conflict:  # the base moved on: these documents wait for the next pass
                return written
            # The whole batch's cache rows first, in one order (see writes.cache_vectors).
            writes.cache_vectors(
                conn,
                identity_id,
                {
                    chunk.content_hash: row
                    for _, chunks, matrix in checked
                    if matrix is not None
                    for chunk, row in zip(chunks, matrix, strict=True)
                },
            )
            for document_id, chunks, matrix in checked:
                assert matrix is not None
                try:
                    _add_vectors(
                        self._dialect.bind(conn),
                        kb_id,
                        document_id,
                        chunks,
                        matrix,
                        identity,
                        identity_id,
                    )
                except (NotFound, Conflict):  # checked before anything is written
                    continue
                written.append(document_id)
        return written

    def count_keyword_only(self, kb_ids: Sequence[int]) -> int:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM documents WHERE kb_id = ANY(%s) AND {KEYWORD_ONLY_WHERE}",
                (kb_list(kb_ids),),
            ).fetchone()
        return int(row[0]) if row else 0


def _add_vectors(
    tx: Bound,
    kb_id: int,
    document_id: str,
    chunks: Sequence[Chunk],
    matrix: np.ndarray,
    identity: EmbedderIdentity,
    identity_id: int,
) -> None:
    """One document's vectors (its row locked), and the document indexed; ``NotFound`` or
    ``Conflict`` (the chunks changed) before anything is written."""
    relational.load_document(tx, kb_id, document_id, lock=True)
    conn = tx.raw
    present = conn.execute("SELECT id FROM chunks WHERE document_id = %s", (document_id,))
    stored = stored_ids_of(document_id, chunks, (row[0] for row in present.fetchall()))
    writes.write_vectors(conn, kb_id, document_id, chunks, stored, matrix, identity_id)
    conn.execute(
        "UPDATE documents SET identity_key = %s, state = %s, updated_at = %s WHERE id = %s",
        (identity.key, str(DocumentState.INDEXED), time.time(), document_id),
    )


class ChunksMixin(PostgresRole):
    """:class:`~lorebase.store.base.Chunks` over PostgreSQL."""

    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        with self._read() as conn:
            return search.get_chunks(conn, kb_list(kb_ids), [str(c) for c in chunk_ids])

    def chunk_documents(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> dict[str, str]:
        with self._read() as conn:
            return search.chunk_documents(conn, kb_list(kb_ids), [str(c) for c in chunk_ids])

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
                "WHERE d.id = %s AND d.kb_id = %s",
                (document_id, kb_id),
            ).fetchone()
        if row is None:
            raise NotFound(relational.NO_DOCUMENT)
        return decompress_text(row[0])
