"""Embedding the documents a pass has read: several documents' chunks in one batch, each
distinct text once, vectors found by content reused, and a stop request's drain window
(:class:`Stop`) watched between the embedder's calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from lorebase.chunk.tokens import estimate_tokens
from lorebase.embed.base import Embedder
from lorebase.errors import Unavailable
from lorebase.ingest.reading import Pending
from lorebase.ingest.report import IngestReport, PassCounts
from lorebase.ingest.writing import DocumentWriter, WritingStore, matrix
from lorebase.store.base import KnowledgeBase
from lorebase.store.states import DocumentState
from lorebase.usage import Role, UsageMeter

# Embed once this many chunks are waiting (several small documents share one call).
EMBED_BATCH_CHUNKS = 256
# Texts are embedded in calls of this many of the embedder's batches (sorted by length first,
# so the batches are those of one long call): progress, and a stop, are seen between calls.
EMBED_CALL_BATCHES = 2
# After a stop request, keep giving written documents their vectors for at most this long.
DRAIN_SECONDS = 5.0


class OutOfTime(Exception):
    """The drain window after a stop request closed in the middle of embedding."""


@dataclass(slots=True)
class Stop:
    """A pass's stop request, and the end of its drain window from the moment it is seen."""

    event: threading.Event | None
    deadline: float | None = None

    def requested(self) -> bool:
        if self.event is None or not self.event.is_set():
            return False
        if self.deadline is None:
            self.deadline = time.monotonic() + DRAIN_SECONDS
        return True

    def expired(self) -> bool:
        return self.requested() and self.deadline is not None and time.monotonic() >= self.deadline


@dataclass(frozen=True, slots=True)
class BatchEmbedder:
    """Gives the documents of one pass over ``kb`` their vectors, batch by batch (at least
    ``batch_chunks`` chunks), and hands each batch to ``writer``. ``progressed`` is called
    after each of the embedder's calls."""

    store: WritingStore
    kb: KnowledgeBase
    writer: DocumentWriter
    embedder: Embedder | None
    stopping: Stop
    progressed: Callable[[], None]
    batch_chunks: int = field(kw_only=True)
    # Where each call to the embedder is counted, under the embedder's name (None: nowhere).
    usage: UsageMeter | None = field(default=None, kw_only=True)
    model: str = field(default="default", kw_only=True)

    @property
    def report(self) -> IngestReport:
        return self.writer.report

    @property
    def counts(self) -> PassCounts:
        return self.writer.counts

    def embed_next(self, waiting: list[Pending], size: int | None = None) -> list[Pending]:
        """Embed the first waiting documents (at least ``size`` chunks, or all of them)
        together, write each one's vectors; returns the documents still waiting. When the
        embedder fails, or the drain window after a stop closes first, every waiting document
        goes back to ``pending`` (written ones stay searchable by keyword) and that is
        raised."""
        kb, counts, stopping = self.kb, self.counts, self.stopping
        size = self.batch_chunks if size is None else size
        count = taken = 0
        for item in waiting:
            count += 1
            taken += len(item.chunks)
            if taken >= size:
                break
        batch, rest = waiting[:count], waiting[count:]
        counts.chunks_waiting -= taken
        for item in batch:
            if item.written is None:  # already embedding once written
                self.store.set_document_state(kb.id, item.document.path, DocumentState.EMBEDDING)
        done_before = counts.chunks_done

        def embedded(texts: int, more: bool) -> None:  # between the calls of a long batch
            counts.chunks_done += texts
            self.progressed()
            if more and stopping.expired():
                raise OutOfTime

        try:
            if stopping.expired():
                raise OutOfTime
            assert self.embedder is not None  # documents wait for vectors only with one
            identity = self.embedder.identity
            vectors = self._vectors(batch, self.embedder, embedded)
        except (Unavailable, OutOfTime):
            counts.chunks_done = done_before  # none of them is done
            for item in waiting:
                self.store.set_document_state(kb.id, item.document.path, DocumentState.PENDING)
            raise
        counts.chunks_done = done_before + chunk_count(batch)
        self.writer.add_vectors(batch, vectors, identity)
        self.progressed()
        return rest

    def _vectors(
        self,
        batch: list[Pending],
        embedder: Embedder,
        embedded: Callable[[int, bool], None],
    ) -> np.ndarray:
        """One vector per chunk of these documents, in order: found by content (before
        their chunks were written, or now) or embedded, each distinct text once, in calls of
        ``EMBED_CALL_BATCHES`` of the embedder's batches (at most ``batch_chunks`` texts;
        ``embedded`` is told after each, and whether more follow)."""
        identity = embedder.identity
        chunks = [c for item in batch for c in item.chunks]
        known: dict[str, np.ndarray] = {}
        for item in batch:
            known.update(item.known)
        hashes = [c.content_hash for c in chunks]
        wanted = [h for h in dict.fromkeys(hashes) if h not in known]
        known.update(self.store.cached_vectors(identity, wanted) if wanted else {})
        missing = list(dict.fromkeys(h for h in hashes if h not in known))
        texts = {c.content_hash: c.embed_text for c in chunks} if missing else {}
        missing.sort(key=lambda h: len(texts[h]))  # each call's texts alike, as one call's
        call = max(1, min(self.batch_chunks, EMBED_CALL_BATCHES * embedder.batch_size))
        for start in range(0, len(missing), call):
            part = missing[start : start + call]
            asked = [texts[h] for h in part]
            began = time.perf_counter()
            fresh = embedder.embed_documents(asked)
            if self.usage is not None:
                self.usage.record(
                    self.kb.id,
                    self.model,
                    Role.EMBEDDING,
                    texts=len(asked),
                    tokens=sum(map(estimate_tokens, asked)),
                    seconds=time.perf_counter() - began,
                )
            known.update(zip(part, fresh, strict=True))
            embedded(len(part), start + call < len(missing))
        self.report.embedded += len(missing)
        self.report.reused += len(hashes) - len(missing)
        return matrix(chunks, known, identity)


def chunk_count(items: Sequence[Pending]) -> int:
    """How many chunks these documents hold. Pure."""
    return sum(len(item.chunks) for item in items)
