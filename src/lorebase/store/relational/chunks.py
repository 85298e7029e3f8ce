"""Chunk reads, written once: hydration in the order asked, the documents of chunks, a
chunk's neighbours, a document's chunks and text, and the documents a filter leaves.

Every list of ids is one bound parameter (:meth:`~.dialect.Dialect.any_of`), however long.
"""

from __future__ import annotations

from collections.abc import Sequence

from lorebase.errors import NotFound
from lorebase.fields import Condition
from lorebase.store.base import StoredChunk
from lorebase.store.document_text import Span, chunk_text, needs_chunks, read_text
from lorebase.store.records import (
    STORED_CHUNK_SELECT,
    kb_list,
    matching_documents_query,
    stored_chunk_from_row,
)
from lorebase.store.relational import rows
from lorebase.store.relational.role import RelationalRole
from lorebase.store.restriction import Restriction

NO_CHUNK = "no such chunk in these knowledge bases; search again for a current id"


class ChunksMixin(RelationalRole):
    """:class:`~lorebase.store.base.Chunks` over a relational database."""

    def get_chunks(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """Hydrated chunks in the order asked; ids outside ``kb_ids`` (or unknown) are left
        out."""
        kbs, wanted = kb_list(kb_ids), [str(c) for c in chunk_ids]
        if not kbs or not wanted:
            return []
        with self._reading() as tx:
            dialect = tx.dialect
            found = {
                chunk.id: chunk
                for chunk in map(
                    stored_chunk_from_row,
                    tx.all(
                        f"{STORED_CHUNK_SELECT} WHERE {dialect.any_of('c.id')} "
                        f"AND {dialect.any_of('c.kb_id')}",
                        (dialect.ids(list(dict.fromkeys(wanted))), dialect.ids(kbs)),
                    ),
                )
            }
        return [found[chunk_id] for chunk_id in wanted if chunk_id in found]

    def chunk_documents(self, kb_ids: Sequence[int], chunk_ids: Sequence[str]) -> dict[str, str]:
        """The document of each chunk (ids outside ``kb_ids``, or unknown, are left out)."""
        kbs, wanted = kb_list(kb_ids), list(dict.fromkeys(str(c) for c in chunk_ids))
        if not kbs or not wanted:
            return {}
        with self._reading() as tx:
            found = self._known_documents(tx, kbs, wanted)
            rest = [chunk_id for chunk_id in wanted if chunk_id not in found]
            if rest:
                dialect = tx.dialect
                found.update(
                    (str(chunk_id), str(document_id))
                    for chunk_id, document_id in tx.all(
                        f"SELECT id, document_id FROM chunks WHERE {dialect.any_of('id')} "
                        f"AND {dialect.any_of('kb_id')}",
                        (dialect.ids(rest), dialect.ids(kbs)),
                    )
                )
        return found

    def neighbors(self, kb_ids: Sequence[int], chunk_id: str, window: int) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""
        kbs = kb_list(kb_ids)
        with self._reading() as tx:
            row = (
                tx.one(
                    "SELECT document_id, ordinal FROM chunks WHERE id = ? "
                    f"AND {tx.dialect.any_of('kb_id')}",
                    (chunk_id, tx.dialect.ids(kbs)),
                )
                if kbs
                else None
            )
            if row is None:
                raise NotFound(NO_CHUNK)
            document_id, ordinal = row
            window = max(0, window)
            found = tx.all(
                f"{STORED_CHUNK_SELECT} WHERE c.document_id = ? AND c.ordinal BETWEEN ? AND ? "
                "ORDER BY c.ordinal",
                (document_id, ordinal - window, ordinal + window),
            )
        return [stored_chunk_from_row(r) for r in found]

    def matching_documents(
        self,
        kb_ids: Sequence[int],
        *,
        path_prefix: str | None = None,
        language: str | None = None,
        conditions: Sequence[Condition] = (),
    ) -> Restriction:
        """See :meth:`lorebase.store.base.Chunks.matching_documents`."""
        kbs = kb_list(kb_ids)
        if not kbs:
            return Restriction()
        with self._reading() as tx:
            dialect = tx.dialect
            sql, params = matching_documents_query(
                dialect.any_of("").strip(),
                "?",
                dialect.ids(kbs),
                path_prefix=path_prefix,
                language=language,
                conditions=conditions,
            )
            key = (tuple(kbs), path_prefix, language, tuple(conditions))
            return self._restriction(
                tx, kbs, key, lambda: Restriction(str(row[0]) for row in tx.all(sql, params))
            )

    def document_chunks(
        self, kb_id: int, document_id: str, start: int, limit: int
    ) -> list[StoredChunk]:
        """One document's chunks in order from ordinal ``start`` (its own index serves it)."""
        with self._reading() as tx:
            rows.load_document(tx, kb_id, document_id)
            found = tx.all(
                f"{STORED_CHUNK_SELECT} WHERE c.document_id = ? AND c.kb_id = ? "
                "AND c.ordinal >= ? ORDER BY c.ordinal LIMIT ?",
                (document_id, kb_id, max(0, start), max(0, limit)),
            )
        return [stored_chunk_from_row(r) for r in found]

    def document_text(self, kb_id: int, document_id: str) -> str:
        with self._reading() as tx:
            row = tx.one(
                "SELECT t.text FROM documents AS d "
                "LEFT JOIN document_texts AS t ON t.document_id = d.id "
                "WHERE d.id = ? AND d.kb_id = ?",
                (document_id, kb_id),
            )
            if row is None:
                raise NotFound(rows.NO_DOCUMENT)
            spans: list[Span] = []
            if needs_chunks(row[0]):  # stored as the gaps between its chunks
                spans = [
                    (int(start), int(end), chunk_text(text, chunk_id))
                    for start, end, text, chunk_id in tx.all(
                        "SELECT start_offset, end_offset, text, id FROM chunks "
                        "WHERE document_id = ?",
                        (document_id,),
                    )
                ]
        return read_text(row[0], spans)
