"""Adding files to a knowledge base: extract, chunk, embed (reusing vectors), store.

Chunks of several documents are embedded together (the embedder sorts them by length, so
batches stay full and padding short), then each document is written in its own transaction.
Unchanged files are recognised by size and mtime without being read, then by content hash;
a chunk whose text was embedded before under the same identity is never embedded again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lorebase.chunk import chunk_document
from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.errors import ExtractionFailed, NotFound, Unavailable
from lorebase.extract.base import content_hash
from lorebase.extract.registry import document_kind, extract_bytes, extractor_for
from lorebase.ingest.sources import iter_files
from lorebase.settings import ExtractSettings
from lorebase.store.base import DocumentRecord, DocumentState, KnowledgeBase, NewDocument, Store
from lorebase.types import Chunk, FailureReason

# Embed once this many chunks are waiting (several small documents share one call).
EMBED_BATCH_CHUNKS = 256


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    key: str  # the document's path within the knowledge base


@dataclass(slots=True)
class IngestReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # why the pass stopped early (the embedder went away)


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


def source_files(paths: Sequence[Path]) -> Iterator[SourceFile]:
    """Files named directly keep their name; files found in a folder are keyed
    ``folder-name/relative/path``. Hidden files inside folders are never read."""
    for path in paths:
        if path.is_dir():
            root = path.resolve()
            for file in iter_files(root):
                yield SourceFile(file, f"{root.name}/{file.relative_to(root).as_posix()}")
        elif path.is_file():
            yield SourceFile(path, path.name)
        else:
            raise NotFound(f"{path} does not exist; check the path and try again")


class Ingestor:
    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        extract_settings: ExtractSettings,
        batch_chunks: int = EMBED_BATCH_CHUNKS,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extract_settings = extract_settings
        self.batch_chunks = batch_chunks

    def add(
        self,
        kb: KnowledgeBase,
        paths: Sequence[Path],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> IngestReport:
        started = time.perf_counter()
        report = IngestReport()
        files = list(source_files(paths))
        identity = self.embedder.identity if self.embedder is not None else None
        if identity is not None and kb.identity_key is None:
            self.store.set_kb_identity(kb.id, identity)
        pending: list[_Pending] = []
        try:
            for done, file in enumerate(files, start=1):
                report.files += 1
                item = self._prepare(kb, file, identity, report)
                if item is not None:
                    pending.append(item)
                    if sum(len(p.chunks) for p in pending) >= self.batch_chunks:
                        self._flush(kb, pending, identity, report)
                        pending = []
                if on_progress is not None:
                    on_progress(Progress(done, len(files), report.chunks))
            self._flush(kb, pending, identity, report)
        except Unavailable as error:
            report.stopped = str(error)
        if identity is not None and report.stopped is None and kb.identity_key != identity.key:
            self.store.set_kb_identity(kb.id, identity)  # every document now has it
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(
        self,
        kb: KnowledgeBase,
        file: SourceFile,
        identity: EmbedderIdentity | None,
        report: IngestReport,
    ) -> _Pending | None:
        """Read, extract and chunk one file; None when it is unchanged or failed."""
        existing = self.store.get_document(kb.id, file.key)
        kind = document_kind(file.path)
        try:
            stat = file.path.stat()
        except OSError:
            return self._fail(kb, file, "other", 0, "", None, FailureReason.UNREADABLE, report)
        if (
            existing is not None
            and _settled(existing, kb, identity)
            and (existing.size, existing.mtime) == (stat.st_size, stat.st_mtime)
        ):
            report.unchanged += 1
            return None
        try:
            extractor_for(file.path, self.extract_settings)
            if stat.st_size > self.extract_settings.max_file_bytes:
                raise ExtractionFailed(FailureReason.TOO_LARGE)
            data = file.path.read_bytes()
        except ExtractionFailed as failure:
            kind_name = kind.value if kind else "other"
            return self._fail(kb, file, kind_name, stat.st_size, "", stat.st_mtime,
                              failure.reason, report)  # fmt: skip
        except OSError:
            return self._fail(kb, file, kind.value if kind else "other", stat.st_size, "",
                              stat.st_mtime, FailureReason.UNREADABLE, report)  # fmt: skip
        digest = content_hash(data)
        if (
            existing is not None
            and existing.content_hash == digest
            and _settled(existing, kb, identity)
        ):
            report.unchanged += 1
            return None
        kind_name = kind.value if kind else "other"
        try:
            extracted = extract_bytes(data, file.path, self.extract_settings)
        except ExtractionFailed as failure:
            return self._fail(kb, file, kind_name, len(data), digest, stat.st_mtime,
                              failure.reason, report)  # fmt: skip
        chunks = chunk_document(extracted, kb.chunk_settings)
        document = NewDocument(
            path=file.key,
            kind=extracted.kind.value,
            size=len(data),
            content_hash=digest,
            mtime=stat.st_mtime,
            title=extracted.title,
            page_count=extracted.page_count,
            encoding=extracted.encoding,
            text=extracted.text,
        )
        return _Pending(document, chunks, existing)

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
        if reason is FailureReason.UNSUPPORTED_FORMAT:
            report.failed.append((file.key, reason.value))
            return
        document = NewDocument(path=file.key, kind=kind, size=size, content_hash=digest,
                               mtime=mtime)  # fmt: skip
        self.store.record_failure(kb.id, document, reason.value)
        report.failed.append((file.key, reason.value))

    def _flush(
        self,
        kb: KnowledgeBase,
        pending: list[_Pending],
        identity: EmbedderIdentity | None,
        report: IngestReport,
    ) -> None:
        """Embed what the waiting documents need (reusing stored vectors), then write each."""
        if not pending:
            return
        vectors = self._vectors([c for p in pending for c in p.chunks], identity, report)
        offset = 0
        for item in pending:
            count = len(item.chunks)
            own = vectors[offset : offset + count] if vectors is not None else None
            offset += count
            self.store.replace_document(
                kb.id, item.document, item.chunks, own, identity, kb.chunk_settings.key
            )
            report.chunks += count
            if item.replaces is None:
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


def _settled(
    document: DocumentRecord, kb: KnowledgeBase, identity: EmbedderIdentity | None
) -> bool:
    """Whether a stored document needs no work as long as its content is the same: indexed
    with the current chunking and embedding identity, or failed (not retried until its
    content changes)."""
    if document.state is DocumentState.FAILED:
        return True
    if document.state is not DocumentState.INDEXED:
        return False
    same_identity = identity is None or document.identity_key == identity.key
    return same_identity and document.settings_key == kb.chunk_settings.key
