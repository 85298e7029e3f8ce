"""The vectors, written once: the arguments of dense search, scores and the reuse lookup
checked and the identity found (the answer is each backend's vector engine: in-memory
matrices over SQLite rows, pgvector), vectors added to documents whose chunks are stored (a
pass that embeds after it writes chunks, a re-embed), and the count of documents searchable by
keyword only."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lorebase.errors import Conflict, NotFound
from lorebase.store.base import DocumentVectors, Scored
from lorebase.store.records import KEYWORD_ONLY_WHERE, document_list, kb_list, stored_ids_of
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import DenseQuery, DocumentChunks, RelationalRole
from lorebase.store.states import DocumentState
from lorebase.store.vectors import checked_query, checked_vectors
from lorebase.types import Chunk, EmbedderIdentity


class VectorsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Vectors` over a relational database and a backend's vector
    engine (the ``_dense_*`` and ``_cached_vectors`` hooks)."""

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
        if limit <= 0 or not kb_ids or (documents is not None and not documents):
            return []
        with self._reading() as tx:
            dense = self._dense_query(tx, kb_ids, identity, query)
            return [] if dense is None else self._dense_search(tx, dense, limit, documents)

    def dense_scores(
        self,
        kb_ids: Sequence[int],
        identity: EmbedderIdentity,
        vector: np.ndarray,
        chunk_ids: Sequence[str],
    ) -> dict[str, float]:
        query = checked_query(vector, identity)
        wanted = [str(chunk_id) for chunk_id in dict.fromkeys(chunk_ids)]
        if not kb_ids or not wanted:
            return {}
        with self._reading() as tx:
            dense = self._dense_query(tx, kb_ids, identity, query)
            return {} if dense is None else self._dense_scores(tx, dense, wanted)

    def cached_vectors(
        self, identity: EmbedderIdentity, content_hashes: Sequence[str]
    ) -> dict[str, np.ndarray]:
        wanted = [str(content_hash) for content_hash in dict.fromkeys(content_hashes)]
        if not wanted:
            return {}
        with self._reading() as tx:
            identity_id = rows.identity_id(tx, identity)
            if identity_id is None:
                return {}
            return self._cached_vectors(tx, identity, identity_id, wanted)

    @staticmethod
    def _dense_query(
        tx: Bound, kb_ids: Sequence[int], identity: EmbedderIdentity, query: np.ndarray
    ) -> DenseQuery | None:
        """The question for the vector engine (``None``: the identity has no vectors)."""
        identity_id = rows.identity_id(tx, identity)
        if identity_id is None:
            return None
        return DenseQuery(kb_list(kb_ids), identity, identity_id, query)

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
        with self._reading() as tx:
            rows.load_document(tx, kb_id, document_id)  # NotFound before registering
        identity_id = self._identity_id(identity)
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            self._add_vectors(tx, kb_id, document_id, chunks, matrix, identity, identity_id)
            self._changed(tx, kb_id, [document_id])

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
        with self._writing() as tx:
            rows.lock_kb(tx, kb_id)
            try:
                rows.require_identity(tx, kb_id, identity.key)
            except Conflict:  # the base moved on: these documents wait for the next pass
                return written
            # The whole batch's cache rows first, in one order (see ``_cache_vectors``).
            self._cache_vectors(
                tx,
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
                    self._add_vectors(tx, kb_id, document_id, chunks, matrix, identity, identity_id)
                except (NotFound, Conflict):  # checked before anything is written
                    continue
                written.append(document_id)
            if written:
                self._changed(tx, kb_id, written)
        return written

    def count_keyword_only(self, kb_ids: Sequence[int]) -> int:
        with self._reading() as tx:
            row = tx.one(
                f"SELECT count(*) FROM documents WHERE {tx.dialect.any_of('kb_id')} "
                f"AND {KEYWORD_ONLY_WHERE}",
                (tx.dialect.ids(kb_list(kb_ids)),),
            )
        return int(row[0]) if row else 0

    def _add_vectors(
        self,
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
        rows.load_document(tx, kb_id, document_id, lock=True)
        present = tx.all("SELECT id FROM chunks WHERE document_id = ?", (document_id,))
        stored = stored_ids_of(document_id, chunks, (row[0] for row in present))
        self._write_vectors(
            tx, DocumentChunks(kb_id, document_id, chunks, stored), matrix, identity_id
        )
        tx.execute(
            "UPDATE documents SET identity_key = ?, state = ?, updated_at = ? WHERE id = ?",
            (identity.key, str(DocumentState.INDEXED), time.time(), document_id),
        )
