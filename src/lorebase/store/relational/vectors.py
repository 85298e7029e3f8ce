"""The write half of the vectors, written once: vectors added to documents whose chunks are
stored (a pass that embeds after it writes chunks, a re-embed), and the count of documents
searchable by keyword only. The read half (dense search, scores, the reuse lookup) is each
backend's vector engine."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from lorebase.errors import Conflict, NotFound
from lorebase.store.base import DocumentState, DocumentVectors
from lorebase.store.records import KEYWORD_ONLY_WHERE, kb_list, stored_ids_of
from lorebase.store.relational import rows
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import RelationalRole
from lorebase.store.vectors import checked_vectors
from lorebase.types import Chunk, EmbedderIdentity


class VectorWritesMixin(RelationalRole):
    """The writing part of :class:`~lorebase.store.base.Vectors`."""

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

    def _cache_vectors(
        self, tx: Bound, identity_id: int, vectors: Mapping[str, np.ndarray]
    ) -> None:
        """Keep these vectors for reuse by content hash, where the backend keeps them apart
        from the chunks (nothing by default: the stored chunks are the cache)."""

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
        self._write_vectors(tx, kb_id, document_id, chunks, stored, matrix, identity_id)
        tx.execute(
            "UPDATE documents SET identity_key = ?, state = ?, updated_at = ? WHERE id = ?",
            (identity.key, str(DocumentState.INDEXED), time.time(), document_id),
        )
