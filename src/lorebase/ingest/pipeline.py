"""Processing files into a knowledge base: extract, chunk, write (searchable by keyword), embed
(reusing vectors), write the vectors.

A file is left alone without being read when its size and mtime match what was indexed;
otherwise its content hash decides. A document is written in two steps, each one transaction:

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
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from lorebase.chunk import chunk_document
from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.embed.registry import Embedders, kb_embedders
from lorebase.errors import (
    Conflict,
    ExtractionFailed,
    LorebaseError,
    NotFound,
    SourceRemoved,
    Unavailable,
)
from lorebase.extract.base import content_hash
from lorebase.extract.registry import document_kind, extractor_for
from lorebase.extract.sandbox import ExtractionPool
from lorebase.ingest.screening import screen
from lorebase.ingest.sources import iter_files
from lorebase.settings import ExtractSettings
from lorebase.store.base import (
    Catalogue,
    DocumentRecord,
    Documents,
    DocumentState,
    DocumentVectors,
    KnowledgeBase,
    NewDocument,
    Vectors,
)
from lorebase.store.records import MOVED
from lorebase.types import Chunk, FailureReason

# Embed once this many chunks are waiting (several small documents share one call).
EMBED_BATCH_CHUNKS = 256
# Extraction runs ahead of embedding until this many written chunks wait for vectors: the
# folder becomes searchable by keyword early, and what is held in memory stays bounded.
LOOKAHEAD_CHUNKS = 8_192
FOLLOWED_SECONDS = 1.0
"""How often a pass asks whether the folders it reads are still followed."""
# After a stop request, keep giving written documents their vectors for at most this long.
DRAIN_SECONDS = 5.0
# Texts are embedded in calls of this many of the embedder's batches (sorted by length first,
# so the batches are those of one long call): progress, and a stop, are seen between calls.
EMBED_CALL_BATCHES = 2
STOP_REQUESTED = "stop requested"
# Up to this many files, stored documents are looked up one by one instead of all at once.
FEW_FILES = 32


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to process. ``path`` picks the extractor (by extension) and, unless ``data`` is
    given (an upload kept in the blob store), is where the bytes are read from."""

    path: Path
    key: str  # the document's path within the knowledge base
    source_id: int | None = None
    data: Callable[[], bytes] | None = None
    display_name: str | None = None


@dataclass(slots=True)
class IngestReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # why the pass ended early (embedder gone, stop requested)
    # What the walks left out, by reason (lorebase.ingest.ignore): never which files.
    left_out: dict[str, int] = field(default_factory=dict)
    # The error that cut the pass short, carried as it was raised (``stopped`` is its text).
    error: LorebaseError | None = field(default=None, repr=False, compare=False)

    def stop(self, error: LorebaseError) -> None:
        """The pass ends early because of ``error`` (the first reason is kept)."""
        if self.stopped is None:
            self.stopped, self.error = str(error), error

    def cut_short(self) -> LorebaseError | None:
        """What ended the pass early, unless it was asked to stop: the error a surface
        reports (the CLI exits with its code)."""
        if self.stopped is None or self.stopped == STOP_REQUESTED:
            return None
        return self.error or Unavailable(self.stopped)

    def merge(self, other: IngestReport) -> None:
        for name in (
            "files",
            "added",
            "updated",
            "unchanged",
            "removed",
            "chunks",
            "embedded",
            "reused",
            "seconds",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failed += other.failed
        if self.stopped is None:
            self.stopped, self.error = other.stopped, other.error
        self.left_out = merge_counts(self.left_out, other.left_out)


def merge_counts(*counts: Mapping[str, int]) -> dict[str, int]:
    """Counts by reason added up, in a stable (sorted) order of reasons."""
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return {reason: total[reason] for reason in sorted(total) if total[reason]}


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a pass is: files done (read, or skipped unchanged) of the files it looks at, and
    how many of them were read; chunks written (searchable by keyword); chunks done (their
    vectors made, or written when there is no embedder) of the chunks known so far (cut from
    the files read); seconds since the pass began. :mod:`lorebase.ingest.progress` turns a
    series of them into a rate and the time left."""

    files_done: int
    files_total: int
    chunks: int
    chunks_done: int = 0
    chunks_total: int = 0
    elapsed: float = 0.0
    files_read: int = 0


@dataclass(slots=True)
class _Pending:
    document: NewDocument
    chunks: list[Chunk]
    replaces: DocumentRecord | None
    vectors_only: bool = False  # same chunks, new embedding identity
    written: DocumentRecord | None = None  # its chunks, once written awaiting vectors
    known: dict[str, np.ndarray] = field(default_factory=dict)  # vectors found by content
    whole: bool = False  # written in one step once its vectors are made (see the docstring)


class _OutOfTime(Exception):
    """The drain window after a stop request closed in the middle of embedding."""


@dataclass(slots=True)
class _Stop:
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


@dataclass(slots=True)
class _Counts:
    """What a pass has done so far, for its progress reports."""

    started: float
    files_total: int
    files_done: int = 0
    files_read: int = 0
    chunks_written: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    chunks_waiting: int = 0  # of the documents written that wait for their vectors

    def progress(self) -> Progress:
        return Progress(
            self.files_done,
            self.files_total,
            self.chunks_written,
            self.chunks_done,
            self.chunks_total,
            time.perf_counter() - self.started,
            self.files_read,
        )


def source_files(
    paths: Sequence[Path],
    left_out: Counter[str] | None = None,
    settings: ExtractSettings | None = None,
) -> Iterator[SourceFile]:
    """Files named directly keep their name as their path; folders are walked and their files
    keyed ``folder-name/relative/path`` (the key a folder source gives them). Hidden files
    inside folders are never read; what a walk leaves out is counted in ``left_out``, and each
    folder is held to the source limits of ``settings``."""
    limits = settings or ExtractSettings()
    for path in paths:
        if path.is_dir():
            root = path.resolve()
            walk = iter_files(
                root,
                None,
                left_out,
                max_files=limits.max_source_files,
                max_bytes=limits.max_source_bytes,
            )
            for file in walk:
                yield SourceFile(file, f"{root.name}/{file.relative_to(root).as_posix()}")
        elif path.is_file():
            yield SourceFile(path, path.name)
        else:
            raise NotFound(f"{path} does not exist; check the path and try again")


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
    ) -> None:
        """``embedders``: the named embedders and the process's own (a base is indexed with
        its own, see :mod:`lorebase.embed.registry`).
        ``on_document(kb_id, record)`` is told each document that settled, indexed or failed
        (the service turns it into an event: pages follow a folder pass live)."""
        self.store = store
        self.embedders = embedders
        self.extract_settings = extract_settings
        self.batch_chunks = batch_chunks
        self.lookahead_chunks = lookahead_chunks
        self.on_document = on_document
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

    def process(
        self,
        kb: KnowledgeBase,
        files: Sequence[SourceFile],
        *,
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> IngestReport:
        """Bring these files' documents up to date. ``full`` reads every file (no size+mtime
        shortcut) and retries failed ones."""
        started = time.perf_counter()
        report = IngestReport(files=len(files))
        kb = self.store.get_kb_by_id(kb.id, totals=False)  # as it is now, not when queued
        name = kb_embedders(kb).indexing  # a base is only ever embedded by its own model
        try:
            embedder = self.embedders.get(name)
            identity = embedder.identity if embedder is not None else None
        except LorebaseError as error:  # not configured (any more), or a server that is down
            report.stop(error)
            report.seconds = time.perf_counter() - started
            return report
        if identity is not None and kb.identity_key is None:
            self.store.switch_kb_embedder(kb.id, identity, name)
            kb = self.store.get_kb_by_id(kb.id)
        known = self._known(kb, files)
        todo = self._changed(kb, files, known, identity, full, report)
        self.store.mark_pending(
            kb.id,
            [placeholder(f) for f in todo if f.key not in known and document_kind(f.path)],
        )
        counts = _Counts(started, len(files), files_done=report.unchanged)

        def progressed() -> None:
            if on_progress is not None:
                on_progress(counts.progress())

        stopping = _Stop(stop)
        followed = _Followed(self.store, kb.id)
        waiting: list[_Pending] = []  # written (or unchanged) chunks awaiting their vectors
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
                    item = self._prepare(kb, file, known.get(file.key), identity, full, report)
                    if item is not None and self._stage(kb, item, identity, report, counts):
                        waiting.append(item)
                        counts.chunks_waiting += len(item.chunks)
                except SourceRemoved:  # removed between the check and the write
                    continue
                if item is not None:
                    counts.chunks_total += len(item.chunks)
                while (
                    waiting
                    and counts.chunks_waiting >= self.lookahead_chunks
                    and not stopping.requested()
                ):
                    waiting = self._embed_next(
                        kb, waiting, embedder, report, counts, progressed, stopping
                    )
                progressed()
            while waiting:
                # Draining after a stop: one document at a time, until the window closes.
                size = 1 if stopping.requested() else self.batch_chunks
                waiting = self._embed_next(
                    kb, waiting, embedder, report, counts, progressed, stopping, size
                )
        except Unavailable as error:
            report.stop(error)
        except _OutOfTime:  # the documents left wait for the next pass, found by keyword
            report.stopped = STOP_REQUESTED
        if identity is not None and report.stopped is None:
            self._switch_identity(kb, identity, name)
        report.seconds = time.perf_counter() - started
        return report

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
        """What is stored for these files: one query for the whole base on a pass, one per
        file for a handful (an upload)."""
        if len(files) > FEW_FILES:
            return {d.path: d for d in self.store.list_documents(kb.id)}
        found = (self.store.get_document(kb.id, f.key) for f in files)
        return {d.path: d for d in found if d is not None}

    # -- deciding what to read ---------------------------------------------------------------
    def _changed(
        self,
        kb: KnowledgeBase,
        files: Sequence[SourceFile],
        known: dict[str, DocumentRecord],
        identity: EmbedderIdentity | None,
        full: bool,
        report: IngestReport,
    ) -> list[SourceFile]:
        """Files whose size or mtime differ from what was indexed (all of them when ``full``);
        the others are counted unchanged without being read."""
        todo = []
        for file in files:
            existing = known.get(file.key)
            if file.data is not None:  # uploads have no mtime: the content hash decides
                todo.append(file)
                continue
            if existing is not None and not full and _settled(existing, kb, identity):
                try:
                    stat = file.path.stat()
                except OSError:
                    todo.append(file)
                    continue
                if (existing.size, existing.mtime) == (stat.st_size, stat.st_mtime):
                    report.unchanged += 1
                    continue
            todo.append(file)
        return todo

    def _prepare(
        self,
        kb: KnowledgeBase,
        file: SourceFile,
        existing: DocumentRecord | None,
        identity: EmbedderIdentity | None,
        full: bool,
        report: IngestReport,
    ) -> _Pending | None:
        """Read, extract and chunk one file; None when unchanged or failed."""
        kind = document_kind(file.path)
        kind_name = kind.value if kind else "other"
        try:
            extractor_for(file.path, self.extract_settings)
            data, mtime = self._read(file)
        except ExtractionFailed as failure:
            size = file.path.stat().st_size if file.data is None and file.path.exists() else 0
            self._fail(kb, file, kind_name, size, "", None, failure.reason, report)
            return None
        except OSError:
            self._fail(kb, file, kind_name, 0, "", None, FailureReason.UNREADABLE, report)
            return None
        left_out = screen(file.path.name, kind, data)
        if left_out is not None:
            self._leave_out(kb, file, existing, left_out, report)
            return None
        digest = content_hash(data)
        same_content = existing is not None and existing.content_hash == digest
        if (
            existing is not None
            and same_content
            and _settled(existing, kb, identity)
            and not (full and existing.state is DocumentState.FAILED)
        ):
            if existing.mtime != mtime:
                self.store.touch_document(kb.id, existing.id, mtime)
            report.unchanged += 1
            return None
        self.store.set_document_state(kb.id, file.key, DocumentState.EXTRACTING)
        try:
            extracted = self.pool.extract(data, file.path)
        except ExtractionFailed as failure:
            self._fail(kb, file, kind_name, len(data), digest, mtime, failure.reason, report)
            return None
        chunks = chunk_document(extracted, kb.chunk_settings)
        document = NewDocument(
            path=file.key,
            kind=extracted.kind.value,
            size=len(data),
            content_hash=digest,
            mtime=mtime,
            title=extracted.title,
            page_count=extracted.page_count,
            encoding=extracted.encoding,
            text=extracted.text,
            source_id=file.source_id,
            display_name=file.display_name,
        )
        vectors_only = (
            same_content
            and existing is not None
            and existing.state is not DocumentState.FAILED
            and existing.settings_key == kb.chunk_settings.key
            and existing.identity_key is not None
            and identity is not None
            and existing.identity_key != identity.key
            and kb.identity_key != identity.key
        )
        return _Pending(document, chunks, existing, vectors_only)

    def _leave_out(
        self,
        kb: KnowledgeBase,
        file: SourceFile,
        existing: DocumentRecord | None,
        reason: str,
        report: IngestReport,
    ) -> None:
        """A file whose bytes must not be indexed (a secret, a machine-written file): counted
        by reason, never named in a log; a version indexed before (``existing``), or the row
        recorded for a new path up front, leaves the base."""
        report.left_out[reason] = report.left_out.get(reason, 0) + 1
        stored = existing or self.store.get_document(kb.id, file.key)
        if stored is not None:
            self.store.delete_documents(kb.id, [stored.id])

    def _read(self, file: SourceFile) -> tuple[bytes, float | None]:
        """The file's bytes and mtime; the size limit is checked before reading."""
        if file.data is not None:
            data = file.data()
            if len(data) > self.extract_settings.max_file_bytes:
                raise ExtractionFailed(FailureReason.TOO_LARGE)
            return data, None
        stat = file.path.stat()
        if stat.st_size > self.extract_settings.max_file_bytes:
            raise ExtractionFailed(FailureReason.TOO_LARGE)
        return file.path.read_bytes(), stat.st_mtime

    def _fail(
        self,
        kb: KnowledgeBase,
        file: SourceFile,
        kind: str,
        size: int,
        digest: str,
        mtime: float | None,
        reason: FailureReason,
        report: IngestReport,
    ) -> None:
        report.failed.append((file.key, reason.value))
        if reason is FailureReason.UNSUPPORTED_FORMAT:
            return
        document = NewDocument(
            path=file.key,
            kind=kind,
            size=size,
            content_hash=digest,
            mtime=mtime,
            source_id=file.source_id,
            display_name=file.display_name,
        )
        self._settled(kb, self.store.record_failure(kb.id, document, reason.value))

    def _settled(self, kb: KnowledgeBase, record: DocumentRecord) -> None:
        if self.on_document is not None:
            self.on_document(kb.id, record)

    # -- writing and embedding ---------------------------------------------------------------
    def _stage(
        self,
        kb: KnowledgeBase,
        item: _Pending,
        identity: EmbedderIdentity | None,
        report: IngestReport,
        counts: _Counts,
    ) -> bool:
        """The first write: the document's chunks, searchable by keyword from now on. Whole
        at once (``indexed``) when there is no embedder or every chunk's vector is stored
        already; otherwise awaiting its vectors (True). A change of identity only (same
        chunks) writes nothing yet and awaits its new vectors."""
        if item.vectors_only:
            return True
        if identity is None:
            self._write_whole(kb, item, None, None, report, counts)
            return False
        hashes = list(dict.fromkeys(c.content_hash for c in item.chunks))
        # Looked up before the write replaces the chunks that may hold them.
        item.known = self.store.cached_vectors(identity, hashes)
        if len(item.known) == len(hashes):
            vectors = _matrix(item.chunks, item.known, identity)
            report.reused += len(item.chunks)
            self._write_whole(kb, item, vectors, identity, report, counts)
            return False
        if item.known and _indexed(item.replaces):
            item.whole = True  # the old chunks keep the vectors it reuses until it is written
            return True
        item.written = self.store.replace_document(
            kb.id,
            item.document,
            item.chunks,
            None,
            None,
            kb.chunk_settings.key,
            awaiting_vectors=True,
        )
        counts.chunks_written += len(item.chunks)
        self._settled(kb, item.written)
        return True

    def _embed_next(
        self,
        kb: KnowledgeBase,
        waiting: list[_Pending],
        embedder: Embedder | None,
        report: IngestReport,
        counts: _Counts,
        progressed: Callable[[], None],
        stopping: _Stop,
        size: int | None = None,
    ) -> list[_Pending]:
        """Embed the first waiting documents (at least ``size`` chunks, or all of them)
        together, write each one's vectors; returns the documents still waiting. When the
        embedder fails, or the drain window after a stop closes first, every waiting document
        goes back to ``pending`` (written ones stay searchable by keyword) and that is
        raised."""
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
            progressed()
            if more and stopping.expired():
                raise _OutOfTime

        try:
            if stopping.expired():
                raise _OutOfTime
            assert embedder is not None  # documents wait for vectors only with an embedder
            identity = embedder.identity
            vectors = self._vectors(batch, embedder, report, embedded)
        except (Unavailable, _OutOfTime):
            counts.chunks_done = done_before  # none of them is done
            for item in waiting:
                self.store.set_document_state(kb.id, item.document.path, DocumentState.PENDING)
            raise
        counts.chunks_done = done_before + _chunk_count(batch)
        self._add_vectors(kb, batch, vectors, identity, report, counts)
        progressed()
        return rest

    def _add_vectors(
        self,
        kb: KnowledgeBase,
        batch: list[_Pending],
        vectors: np.ndarray,
        identity: EmbedderIdentity,
        report: IngestReport,
        counts: _Counts,
    ) -> None:
        """The second write, for the batch in one transaction (a document written whole now,
        see the module docstring, in one of its own). A document deleted (or
        written again by someone else) since its chunks were written is left as it is now:
        the vectors belonged to what is gone."""
        documents = []
        offset = 0
        second: list[_Pending] = []
        for item in batch:
            own = vectors[offset : offset + len(item.chunks)]
            offset += len(item.chunks)
            if item.whole:
                self._write_whole(kb, item, own, identity, report, None)
                counts.chunks_written += len(item.chunks)  # its chunks are done already
                continue
            stored = item.written if item.written is not None else item.replaces
            assert stored is not None  # written by _stage, or stored before (vectors only)
            documents.append(DocumentVectors(stored.id, item.chunks, own))
            second.append(item)
        written = (
            set(self.store.add_vectors_many(kb.id, documents, identity)) if documents else set()
        )
        for item, document in zip(second, documents, strict=True):
            if document.document_id not in written:
                continue
            if item.written is not None:
                indexed = replace(
                    item.written, state=DocumentState.INDEXED, identity_key=identity.key
                )
                self._settled(kb, indexed)
            self._count_done(item, report)

    def _write_whole(
        self,
        kb: KnowledgeBase,
        item: _Pending,
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        report: IngestReport,
        counts: _Counts | None,
    ) -> None:
        """One write of the document with its vectors (if any); ``counts`` when its chunks
        were not counted as done yet. A base that switched to another embedder since the pass
        began refuses the vectors: the document waits for the next pass."""
        try:
            record = self.store.replace_document(
                kb.id, item.document, item.chunks, vectors, identity, kb.chunk_settings.key
            )
        except SourceRemoved:  # its folder was removed while it was embedded: nothing stays
            return
        except Conflict:
            self.store.set_document_state(kb.id, item.document.path, DocumentState.PENDING)
            report.stop(Unavailable(MOVED))
            return
        if counts is not None:
            counts.chunks_written += len(item.chunks)
            counts.chunks_done += len(item.chunks)
        self._settled(kb, record)
        self._count_done(item, report)

    @staticmethod
    def _count_done(item: _Pending, report: IngestReport) -> None:
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

    def _vectors(
        self,
        batch: list[_Pending],
        embedder: Embedder,
        report: IngestReport,
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
            fresh = embedder.embed_documents([texts[h] for h in part])
            known.update(zip(part, fresh, strict=True))
            embedded(len(part), start + call < len(missing))
        report.embedded += len(missing)
        report.reused += len(hashes) - len(missing)
        return _matrix(chunks, known, identity)


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


def _chunk_count(items: Sequence[_Pending]) -> int:
    return sum(len(item.chunks) for item in items)


def _matrix(
    chunks: Sequence[Chunk], known: dict[str, np.ndarray], identity: EmbedderIdentity
) -> np.ndarray:
    out = np.empty((len(chunks), identity.dim), dtype=np.float32)
    for row, chunk in enumerate(chunks):
        out[row] = known[chunk.content_hash]
    return out


def placeholder(file: SourceFile) -> NewDocument:
    """The row a new path gets before it is read: pending, nothing known but where it is."""
    kind = document_kind(file.path)
    return NewDocument(
        path=file.key,
        kind=kind.value if kind else "other",
        size=0,
        content_hash="",
        source_id=file.source_id,
    )


def _settled(
    document: DocumentRecord, kb: KnowledgeBase, identity: EmbedderIdentity | None
) -> bool:
    """Whether a stored document needs no work while its content stays the same: indexed
    with the current chunking and embedding identity, or failed (not retried until its
    content changes)."""
    if document.state is DocumentState.FAILED:
        return True
    if document.state is not DocumentState.INDEXED:
        return False
    same_identity = identity is None or document.identity_key == identity.key
    return same_identity and document.settings_key == kb.chunk_settings.key


def _indexed(record: DocumentRecord | None) -> bool:
    """Whether a document's stored version is indexed (found by both arms). Pure."""
    return record is not None and record.state is DocumentState.INDEXED
