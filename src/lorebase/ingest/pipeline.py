"""Processing files into a knowledge base: extract, chunk, embed (reusing vectors), store.

A file is left alone without being read when its size and mtime match what was indexed;
otherwise its content hash decides. Chunks of several documents are embedded together (the
embedder sorts them by length, so batches stay full and padding short), then each document is
written in its own transaction. A chunk whose text was embedded before under the same identity
is never embedded again.

Document states on the way: ``pending`` (a new path, recorded up front so a crash leaves it
visible), ``extracting``, ``embedding``, then ``indexed`` or ``failed``. A stop request (first
SIGINT/SIGTERM) ends the pass after the current document; documents already extracted are
written while the drain window lasts, the rest stay pending.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from lorebase.chunk import chunk_document
from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.errors import ExtractionFailed, NotFound, Unavailable
from lorebase.extract.base import content_hash
from lorebase.extract.registry import document_kind, extractor_for
from lorebase.extract.sandbox import ExtractionPool
from lorebase.ingest.sources import iter_files
from lorebase.settings import ExtractSettings
from lorebase.store.base import (
    Catalogue,
    DocumentRecord,
    Documents,
    DocumentState,
    KnowledgeBase,
    NewDocument,
    Vectors,
)
from lorebase.types import Chunk, FailureReason

# Embed once this many chunks are waiting (several small documents share one call).
EMBED_BATCH_CHUNKS = 256
# After a stop request, keep writing already-extracted documents for at most this long.
DRAIN_SECONDS = 5.0
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
        self.stopped = self.stopped or other.stopped


@dataclass(frozen=True, slots=True)
class Progress:
    files_done: int
    files_total: int
    chunks: int


@dataclass(slots=True)
class _Pending:
    document: NewDocument
    chunks: list[Chunk]
    replaces: DocumentRecord | None
    vectors_only: bool = False  # same chunks, new embedding identity


def source_files(paths: Sequence[Path]) -> Iterator[SourceFile]:
    """Files named directly keep their name as their path; folders are walked and their files
    keyed ``folder-name/relative/path`` (the key a folder source gives them). Hidden files
    inside folders are never read."""
    for path in paths:
        if path.is_dir():
            root = path.resolve()
            for file in iter_files(root):
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
        embedder: Embedder | None,
        extract_settings: ExtractSettings,
        batch_chunks: int = EMBED_BATCH_CHUNKS,
        on_document: Callable[[int, DocumentRecord], None] | None = None,
    ) -> None:
        """``on_document(kb_id, record)`` is told each document that settled, indexed or failed
        (the service turns it into an event: pages follow a folder pass live)."""
        self.store = store
        self.embedder = embedder
        self.extract_settings = extract_settings
        self.batch_chunks = batch_chunks
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
        identity = self.embedder.identity if self.embedder is not None else None
        if identity is not None and kb.identity_key is None:
            self.store.set_kb_identity(kb.id, identity)
            kb = self.store.get_kb_by_id(kb.id)
        known = self._known(kb, files)
        todo = self._changed(kb, files, known, identity, full, report)
        self.store.mark_pending(
            kb.id,
            [_placeholder(f) for f in todo if f.key not in known and document_kind(f.path)],
        )
        pending: list[_Pending] = []
        try:
            for done, file in enumerate(todo, start=1):
                if stop is not None and stop.is_set():
                    report.stopped = STOP_REQUESTED
                    break
                item = self._prepare(kb, file, known.get(file.key), identity, full, report)
                if item is not None:
                    pending.append(item)
                    if sum(len(p.chunks) for p in pending) >= self.batch_chunks:
                        self._flush(kb, pending, identity, report)
                        pending = []
                if on_progress is not None:  # chunks written, and cut ones waiting
                    waiting = sum(len(p.chunks) for p in pending)
                    on_progress(
                        Progress(report.unchanged + done, len(files), report.chunks + waiting)
                    )
            deadline = time.monotonic() + DRAIN_SECONDS if report.stopped else None
            self._flush(kb, pending, identity, report, deadline)
        except Unavailable as error:
            report.stopped = str(error)
        if identity is not None and report.stopped is None:
            self._switch_identity(kb, identity)
        report.seconds = time.perf_counter() - started
        return report

    def _switch_identity(self, kb: KnowledgeBase, identity: EmbedderIdentity) -> None:
        """Once every indexed document has vectors of the new identity, the base answers
        from it and the old vectors go; until then search keeps using the old ones."""
        if kb.identity_key == identity.key:
            return
        documents = self.store.list_documents(kb.id, DocumentState.INDEXED)
        if all(d.identity_key == identity.key for d in documents):
            self.store.set_kb_identity(kb.id, identity)
            self.store.purge_other_identities(kb.id, identity)

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

    # -- embedding and writing ---------------------------------------------------------------
    def _flush(
        self,
        kb: KnowledgeBase,
        pending: list[_Pending],
        identity: EmbedderIdentity | None,
        report: IngestReport,
        deadline: float | None = None,
    ) -> None:
        """Embed what the waiting documents need (reusing stored vectors), then write each.
        With a ``deadline`` (draining after a stop), documents go one at a time until it."""
        if not pending:
            return
        if deadline is not None:
            for position, item in enumerate(pending):
                if time.monotonic() >= deadline:
                    for left in pending[position:]:
                        self.store.set_document_state(
                            kb.id, left.document.path, DocumentState.PENDING
                        )
                    return
                self._flush(kb, [item], identity, report)
            return
        for item in pending:
            self.store.set_document_state(kb.id, item.document.path, DocumentState.EMBEDDING)
        try:
            vectors = self._vectors([c for p in pending for c in p.chunks], identity, report)
        except Unavailable:
            for item in pending:
                self.store.set_document_state(kb.id, item.document.path, DocumentState.PENDING)
            raise
        offset = 0
        for item in pending:
            count = len(item.chunks)
            own = vectors[offset : offset + count] if vectors is not None else None
            offset += count
            self._write(kb, item, own, identity, report)

    def _write(
        self,
        kb: KnowledgeBase,
        item: _Pending,
        vectors: np.ndarray | None,
        identity: EmbedderIdentity | None,
        report: IngestReport,
    ) -> None:
        if (
            item.vectors_only
            and item.replaces is not None
            and vectors is not None
            and identity is not None  # always so when vectors_only
        ):
            # Same chunks under a new model: keep the old vectors until the base switches.
            self.store.add_vectors(kb.id, item.replaces.id, item.chunks, vectors, identity)
        else:
            record = self.store.replace_document(
                kb.id, item.document, item.chunks, vectors, identity, kb.chunk_settings.key
            )
            self._settled(kb, record)
        report.chunks += len(item.chunks)
        if item.replaces is None or item.replaces.state is DocumentState.PENDING:
            report.added += 1
        else:
            report.updated += 1

    def _vectors(
        self, chunks: list[Chunk], identity: EmbedderIdentity | None, report: IngestReport
    ) -> np.ndarray | None:
        if self.embedder is None or identity is None:
            return None
        hashes = [c.content_hash for c in chunks]
        known = self.store.cached_vectors(identity, list(dict.fromkeys(hashes)))
        missing = list(dict.fromkeys(h for h in hashes if h not in known))
        if missing:
            texts = {c.content_hash: c.embed_text for c in chunks}
            fresh = self.embedder.embed_documents([texts[h] for h in missing])
            known.update(zip(missing, fresh, strict=True))
        report.embedded += len(missing)
        report.reused += len(hashes) - len(missing)
        out = np.empty((len(chunks), identity.dim), dtype=np.float32)
        for row, digest in enumerate(hashes):
            out[row] = known[digest]
        return out


def _placeholder(file: SourceFile) -> NewDocument:
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
