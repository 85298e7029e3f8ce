"""The writes of a pass, each one transaction (the order is drawn in
:mod:`lorebase.ingest.pipeline`): a document's chunks, searchable by keyword at once, then its
vectors; or the document whole, with its vectors, in one. Each document that settles is told
to ``settled`` (the service turns it into an event)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, SourceRemoved, Unavailable
from lorebase.ingest.reading import Pending
from lorebase.ingest.report import IngestReport, PassCounts
from lorebase.store.base import DocumentRecord, Documents, DocumentVectors, KnowledgeBase, Vectors
from lorebase.store.records import MOVED
from lorebase.store.states import DocumentState
from lorebase.types import Chunk


class WritingStore(Documents, Vectors, Protocol):
    """The roles the writes (and embedding) use: a base's documents and their vectors."""


@dataclass(frozen=True, slots=True)
class DocumentWriter:
    """Writes the documents of one pass over ``kb``, counting them in ``report`` and
    ``counts``."""

    store: WritingStore
    kb: KnowledgeBase
    report: IngestReport
    counts: PassCounts
    settled: Callable[[DocumentRecord], None]

    def stage(self, item: Pending, identity: EmbedderIdentity | None) -> bool:
        """The first write: the document's chunks, searchable by keyword from now on. Whole
        at once (``indexed``) when there is no embedder or every chunk's vector is stored
        already; otherwise awaiting its vectors (True). A change of identity only (same
        chunks) writes nothing yet and awaits its new vectors."""
        if item.vectors_only:
            return True
        if identity is None:
            self.write_whole(item, None, None, counted=False)
            return False
        hashes = list(dict.fromkeys(c.content_hash for c in item.chunks))
        # Looked up before the write replaces the chunks that may hold them.
        item.known = self.store.cached_vectors(identity, hashes)
        if len(item.known) == len(hashes):
            vectors = matrix(item.chunks, item.known, identity)
            self.report.reused += len(item.chunks)
            self.write_whole(item, vectors, identity, counted=False)
            return False
        if item.known and is_indexed(item.replaces):
            item.whole = True  # the old chunks keep the vectors it reuses until it is written
            return True
        item.written = self.store.replace_document(
            self.kb.id,
            item.document,
            item.chunks,
            None,
            None,
            self.kb.chunk_settings.key,
            awaiting_vectors=True,
        )
        self.counts.chunks_written += len(item.chunks)
        self.settled(item.written)
        return True

    def add_vectors(
        self, batch: list[Pending], vectors: np.ndarray, identity: EmbedderIdentity
    ) -> None:
        """The second write, for the batch in one transaction (a document written whole now
        in one of its own). A document deleted (or written again by someone else) since its
        chunks were written is left as it is now: the vectors belonged to what is gone."""
        documents = []
        offset = 0
        second: list[Pending] = []
        for item in batch:
            own = vectors[offset : offset + len(item.chunks)]
            offset += len(item.chunks)
            if item.whole:
                self.write_whole(item, own, identity, counted=True)
                self.counts.chunks_written += len(item.chunks)  # its chunks are done already
                continue
            stored = item.written if item.written is not None else item.replaces
            assert stored is not None  # written by stage, or stored before (vectors only)
            documents.append(DocumentVectors(stored.id, item.chunks, own))
            second.append(item)
        written = (
            set(self.store.add_vectors_many(self.kb.id, documents, identity))
            if documents
            else set()
        )
        for item, document in zip(second, documents, strict=True):
            if document.document_id not in written:
                continue
            if item.written is not None:
                indexed = replace(
                    item.written, state=DocumentState.INDEXED, identity_key=identity.key
                )
                self.settled(indexed)
            self._count_done(item)

    def write_whole(
        self,
        item: Pending,
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        *,
        counted: bool,
    ) -> None:
        """One write of the document with its vectors (if any); ``counted`` when its chunks
        were counted as done already. A base that switched to another embedder since the
        pass began refuses the vectors: the document waits for the next pass."""
        kb = self.kb
        try:
            record = self.store.replace_document(
                kb.id, item.document, item.chunks, vectors, identity, kb.chunk_settings.key
            )
        except SourceRemoved:  # its folder was removed while it was embedded: nothing stays
            return
        except Conflict:
            self.store.set_document_state(kb.id, item.document.path, DocumentState.PENDING)
            self.report.stop(Unavailable(MOVED))
            return
        if not counted:
            self.counts.chunks_written += len(item.chunks)
            self.counts.chunks_done += len(item.chunks)
        self.settled(record)
        self._count_done(item)

    def _count_done(self, item: Pending) -> None:
        report = self.report
        report.chunks += len(item.chunks)
        replaces = item.replaces
        # A pending document with vectors still holds an indexed version (a pass stopped
        # before its new one was written): that is an update.
        if replaces is None or (
            replaces.state is DocumentState.PENDING and replaces.identity_key is None
        ):
            report.added += 1
        else:
            report.updated += 1


def matrix(
    chunks: Sequence[Chunk], known: dict[str, np.ndarray], identity: EmbedderIdentity
) -> np.ndarray:
    """The chunks' vectors, one row each, from ``known`` (by content hash)."""
    out = np.empty((len(chunks), identity.dim), dtype=np.float32)
    for row, chunk in enumerate(chunks):
        out[row] = known[chunk.content_hash]
    return out


def is_indexed(record: DocumentRecord | None) -> bool:
    """Whether a document's stored version is indexed (found by both arms). Pure."""
    return record is not None and record.state is DocumentState.INDEXED
