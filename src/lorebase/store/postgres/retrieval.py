"""The PostgreSQL read side of search: the lexical index, vectors (search, the reuse cache,
identity switches) and chunk hydration."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lorebase.store.base import Scored
from lorebase.store.postgres import search
from lorebase.store.postgres.role import PostgresRole, lookup_identity
from lorebase.store.records import (
    document_list,
    kb_list,
)
from lorebase.store.relational.vectors import VectorWritesMixin
from lorebase.store.vectors import VECTOR_DTYPE, checked_query
from lorebase.types import EmbedderIdentity


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


class VectorsMixin(VectorWritesMixin, PostgresRole):
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
