"""Processing files into a knowledge base: extract, chunk, write (searchable by keyword), embed
(reusing vectors), write the vectors.

A file is left alone without being read when its size and mtime match what was indexed and
its document was made by the running versions (:mod:`lorebase.ingest.versions`; a stale one is
read again, its unchanged chunks keeping their vectors); otherwise its content hash decides.
A document is written in two steps, each one transaction:

1. As soon as it is extracted and chunked, its chunks replace whatever the path held (the old
   version's vectors go with its chunks): the document is found by keyword from now on, whole,
   and stays ``embedding``. A document whose every chunk has a vector stored already (a moved
   file, an unchanged chunk) is written whole at once instead, ``indexed``. So is, once its
   vectors are made, a new version of an indexed document that reuses some of the old one's
   vectors: its old version stays found by both arms until then, and a pass that ends before
   (a stop, the embedder gone, a kill) loses no vector (the old chunks still hold them).
2. Its vectors, when they are made (:meth:`~lorebase.store.base.Vectors.add_vectors`): it is
   ``indexed``. Chunks of several documents are embedded together (the embedder sorts them by
   length, so batches stay full and padding short), and extraction runs ahead of embedding by
   up to ``lookahead_chunks``: a folder is searchable by keyword long before it is embedded.

A chunk whose text was embedded before under the same identity is never embedded again: the
stored vectors are looked up before step 1 replaces the chunks that hold them.

Document states on the way: ``pending`` (a new path, recorded up front so a crash leaves it
visible), ``extracting``, ``embedding`` (its chunks written, its vectors coming), then
``indexed`` or ``failed``. A crash between the steps leaves an ``embedding`` document, still
found by keyword, that the next pass resets to ``pending``, reads and finishes. A
stop request (first SIGINT/SIGTERM) ends the pass after the current document; documents waiting
for vectors get them while the drain window lasts, the rest go back to ``pending``, keyword
searchable. Without an embedder a document is written whole, without vectors, in one step.

The :class:`Ingestor` runs a pass; each step is a module of its own: what it decides before
reading (:mod:`~lorebase.ingest.files`), reading one file (:mod:`~lorebase.ingest.reading`),
the writes (:mod:`~lorebase.ingest.writing`), embedding (:mod:`~lorebase.ingest.embedding`)
and what it reports (:mod:`~lorebase.ingest.report`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import Protocol

from lorebase.embed.base import EmbedderIdentity
from lorebase.embed.registry import Embedders, kb_embedders, shown_name
from lorebase.errors import LorebaseError, SourceRemoved, Unavailable
from lorebase.extract.sandbox import ExtractionPool
from lorebase.ingest.embedding import EMBED_BATCH_CHUNKS, BatchEmbedder, OutOfTime, Stop
from lorebase.ingest.files import SourceFile, placeholders, stale_containers, to_read
from lorebase.ingest.reading import FileReader, Pending
from lorebase.ingest.report import STOP_REQUESTED, IngestReport, PassCounts, Progress
from lorebase.ingest.writing import DocumentWriter
from lorebase.languages import LanguageDetector
from lorebase.settings import ExtractSettings
from lorebase.store.base import Catalogue, DocumentRecord, Documents, KnowledgeBase, Vectors
from lorebase.types import Extracted
from lorebase.usage import UsageMeter

logger = logging.getLogger(__name__)

# Extraction runs ahead of embedding until this many written chunks wait for vectors: the
# folder becomes searchable by keyword early, and what is held in memory stays bounded.
LOOKAHEAD_CHUNKS = 8_192
FOLLOWED_SECONDS = 1.0
"""How often a pass asks whether the folders it reads are still followed."""
# Up to this many files, stored documents are looked up one by one instead of all at once.
FEW_FILES = 32


class IndexingStore(Catalogue, Documents, Vectors, Protocol):
    """The roles indexing writes: the base (its identity), its documents, their vectors."""


class Ingestor:
    def __init__(
        self,
        store: IndexingStore,
        embedders: Embedders,
        extract_settings: ExtractSettings,
        batch_chunks: int = EMBED_BATCH_CHUNKS,
        on_document: Callable[[int, DocumentRecord], None] | None = None,
        lookahead_chunks: int = LOOKAHEAD_CHUNKS,
        detector: LanguageDetector | None = None,
        usage: UsageMeter | None = None,
    ) -> None:
        """``embedders``: the named embedders and the process's own (a base is indexed with
        its own, see :mod:`lorebase.embed.registry`); ``detector``: tells each passage's
        language (one is made when not given).
        ``on_document(kb_id, record)`` is told each document that settled, indexed or failed
        (the service turns it into an event: pages follow a folder pass live); ``usage``:
        where each call to an embedder is counted (flushed at the end of every pass)."""
        self.store = store
        self.embedders = embedders
        self.extract_settings = extract_settings
        self.batch_chunks = batch_chunks
        self.lookahead_chunks = lookahead_chunks
        self.on_document = on_document
        # Its model loads with the first passage told.
        self.detector = detector if detector is not None else LanguageDetector()
        self.usage = usage
        self._pool: ExtractionPool | None = None
        self._pool_lock = threading.Lock()

    @property
    def pool(self) -> ExtractionPool:
        """The worker processes files are read in (bounded memory and time), started lazily."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ExtractionPool(self.extract_settings)
            return self._pool

    def close(self) -> None:
        """Stop the extraction workers; a later pass starts new ones."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _extract(self, data: bytes, path: PurePath) -> Extracted:
        return self.pool.extract(data, path)

    def process(
        self,
        kb: KnowledgeBase,
        files: Sequence[SourceFile],
        *,
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        stale: bool = True,
    ) -> IngestReport:
        """Bring these files' documents up to date. ``full`` reads every file (no size+mtime
        shortcut) and retries failed ones; ``stale`` (the default) reads documents an older
        version made again, False leaves them (a server re-reads them in the background)."""
        started = time.perf_counter()
        report = IngestReport(files=len(files))
        kb = self.store.get_kb_by_id(kb.id, totals=False)  # as it is now, not when queued
        name = kb_embedders(kb).indexing  # a base is only ever embedded by its own model
        try:
            embedder = self.embedders.for_base(name, kb)  # a personal base: its owner's key
            identity = embedder.identity if embedder is not None else None
        except LorebaseError as error:  # not configured (any more), or a server that is down
            report.stop(error)
            report.seconds = time.perf_counter() - started
            return report
        if identity is not None and kb.identity_key is None:
            self.store.switch_kb_embedder(kb.id, identity, name)
            kb = self.store.get_kb_by_id(kb.id)
        known = self._known(kb, files)
        containers = stale_containers(known.values()) if stale else frozenset()
        todo = to_read(kb, files, known, identity, full, report, stale=stale, containers=containers)
        self.store.mark_pending(kb.id, placeholders(f for f in todo if f.key not in known))
        counts = PassCounts(started, len(files), files_done=report.unchanged)

        def progressed() -> None:
            if on_progress is not None:
                on_progress(counts.progress())

        def settled(record: DocumentRecord) -> None:
            if self.on_document is not None:
                self.on_document(kb.id, record)

        stopping = Stop(stop)
        followed = _Followed(self.store, kb.id)
        reader = FileReader(
            self.store,
            self.extract_settings,
            self._extract,
            settled,
            kb,
            identity,
            report,
            full=full,
            detector=self.detector,
            stale=stale,
            containers=containers,
        )
        writer = DocumentWriter(self.store, kb, report, counts, settled)
        embedding = BatchEmbedder(
            self.store,
            kb,
            writer,
            embedder,
            stopping,
            progressed,
            batch_chunks=self.batch_chunks,
            usage=self.usage,
            model=shown_name(name),
        )
        waiting: list[Pending] = []  # written (or unchanged) chunks awaiting their vectors
        try:
            for file in todo:
                if stopping.requested():
                    report.stopped = STOP_REQUESTED  # files left unread
                    break
                counts.files_done += 1
                if not followed.holds(file.source_id):
                    continue  # its folder was removed during the pass: nothing of it is read
                counts.files_read += 1
                try:
                    for item in reader.read(file, known.get(file.key)):
                        counts.chunks_total += len(item.chunks)
                        if writer.stage(item, identity):
                            waiting.append(item)
                            counts.chunks_waiting += len(item.chunks)
                except SourceRemoved:  # removed between the check and the write
                    continue
                while (
                    waiting
                    and counts.chunks_waiting >= self.lookahead_chunks
                    and not stopping.requested()
                ):
                    waiting = embedding.embed_next(waiting)
                progressed()
            while waiting:
                # Draining after a stop: one document at a time, until the window closes.
                size = 1 if stopping.requested() else self.batch_chunks
                waiting = embedding.embed_next(waiting, size)
        except Unavailable as error:
            report.stop(error)
        except OutOfTime:  # the documents left wait for the next pass, found by keyword
            report.stopped = STOP_REQUESTED
        if identity is not None and report.stopped is None:
            self._switch_identity(kb, identity, name)
        self._flush_usage()
        report.seconds = time.perf_counter() - started
        return report

    def _flush_usage(self) -> None:
        """Write the pass's counted calls; a failed write keeps them for the next flush and
        never fails the pass."""
        if self.usage is None:
            return
        try:
            self.usage.flush()
        except Exception as error:  # counted again at the next flush
            logger.warning("usage not written this time (%s); kept for later", type(error).__name__)

    def _switch_identity(
        self, kb: KnowledgeBase, identity: EmbedderIdentity, name: str | None
    ) -> None:
        """Once every indexed document has vectors of the new identity, the base answers
        from it (and from the embedder ``name`` that made them: a re-embed ends) and the old
        vectors go, in one transaction that checks it; until then search keeps using the
        old ones."""
        if kb.identity_key == identity.key and kb.embedder == name and kb.embedder_next is None:
            return
        self.store.switch_kb_embedder(kb.id, identity, name)

    def _known(self, kb: KnowledgeBase, files: Sequence[SourceFile]) -> dict[str, DocumentRecord]:
        """What is stored for these files and their parts: one query for the whole base on a
        pass, two per file for a handful (an upload)."""
        if len(files) > FEW_FILES:
            return {d.path: d for d in self.store.list_documents(kb.id)}
        found = [d for f in files if (d := self.store.get_document(kb.id, f.key)) is not None]
        parts = [p for d in found for p in self.store.parts_of(kb.id, d.path)]
        return {d.path: d for d in [*found, *parts]}


class _Followed:
    """Whether a file's source is still followed by its base, asked of the store at most
    once every :data:`FOLLOWED_SECONDS` (a folder removed during a pass stops it reading that
    folder's files; the store refuses any document of it written meanwhile)."""

    def __init__(self, store: Catalogue, kb_id: int) -> None:
        self.store = store
        self.kb_id = kb_id
        self._ids: set[int] = set()
        self._read_at = float("-inf")

    def holds(self, source_id: int | None) -> bool:
        if source_id is None:  # an upload, or a file given on its own to this pass
            return True
        now = time.monotonic()
        if source_id not in self._ids or now - self._read_at >= FOLLOWED_SECONDS:
            self._ids = {source.id for source in self.store.list_sources(self.kb_id)}
            self._read_at = now
        return source_id in self._ids
