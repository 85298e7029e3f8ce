"""Reading one file of a pass: its bytes within the size limit, screened for what must not be
indexed, extracted (in the bounded worker pool) and chunked, into :class:`Pending` documents
for the writes; or, when it cannot be read, its failure recorded.

A file may hold documents of its own (a mail's attachments, a mailbox's messages:
:class:`~lorebase.types.Part`): each becomes a document whose path is the file's, then
:data:`~lorebase.types.CITATION_SEPARATOR`, then its name (``mail.eml › report.pdf``), whose
``container`` is the file's path. They are read with their container and go with it: a part
no longer in the file, and every part of a file that failed or left the base, is deleted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import PurePath

import numpy as np

from lorebase.chunk import chunk_document
from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import ExtractionFailed
from lorebase.extract.base import content_hash
from lorebase.extract.registry import extractor_for
from lorebase.formats import document_kind, holds_parts
from lorebase.ingest.files import SourceFile, up_to_date
from lorebase.ingest.report import IngestReport
from lorebase.ingest.screening import screen
from lorebase.ingest.versions import running_versions, versions_of
from lorebase.languages import LanguageDetector, document_language, passage_language
from lorebase.settings import ExtractSettings
from lorebase.store.base import DocumentRecord, Documents, KnowledgeBase, NewDocument, Region
from lorebase.store.states import DocumentState
from lorebase.types import CITATION_SEPARATOR, Chunk, ContentKind, Extracted, FailureReason, Part


@dataclass(slots=True)
class Pending:
    """A document read and chunked, on its way through the writes
    (:mod:`lorebase.ingest.writing`)."""

    document: NewDocument
    chunks: list[Chunk]
    replaces: DocumentRecord | None
    vectors_only: bool = False  # same chunks, new embedding identity
    written: DocumentRecord | None = None  # its chunks, once written awaiting vectors
    known: dict[str, np.ndarray] = field(default_factory=dict)  # vectors found by content
    whole: bool = False  # written in one step once its vectors are made (see writing)


@dataclass(frozen=True, slots=True)
class FileReader:
    """Reads the files of one pass over ``kb``. ``extract`` runs an extractor on a file's
    bytes (the pass's worker pool); ``settled`` is told each document that failed; ``full``
    reads a file whose stored version failed again; ``stale`` reads a document an older
    version made again (and a file of ``containers``: one holding such a part)."""

    store: Documents
    settings: ExtractSettings
    extract: Callable[[bytes, PurePath], Extracted]
    settled: Callable[[DocumentRecord], None]
    kb: KnowledgeBase
    identity: EmbedderIdentity | None
    report: IngestReport
    full: bool = field(kw_only=True)
    detector: LanguageDetector = field(kw_only=True)
    stale: bool = field(default=True, kw_only=True)
    containers: frozenset[str] = field(default=frozenset(), kw_only=True)

    def read(self, file: SourceFile, existing: DocumentRecord | None) -> list[Pending]:
        """Read, extract and chunk one file: its document first, then its parts' (those that
        changed); empty when it is unchanged or failed."""
        kb, report = self.kb, self.report
        kind = document_kind(file.path)
        kind_name = kind or "other"
        try:
            extractor_for(file.path, self.settings)
            data, mtime = self._bytes(file)
        except ExtractionFailed as failure:  # not read: its size and time say when it changes
            size, mtime = _stat(file)
            self._fail(file, kind_name, size, "", mtime, failure.reason)
            return []
        except OSError:
            self._fail(file, kind_name, 0, "", None, FailureReason.UNREADABLE)
            return []
        left_out = screen(file.path.name, kind, data)
        if left_out is not None:
            self._leave_out(file, existing, left_out)
            return []
        digest = content_hash(data)
        same_content = existing is not None and existing.content_hash == digest
        if (
            existing is not None
            and same_content
            and up_to_date(existing, kb, self.identity, stale=self.stale)
            and not (self.stale and file.key in self.containers)
            and not (self.full and existing.state is DocumentState.FAILED)
        ):
            if existing.mtime != mtime:
                self.store.touch_document(kb.id, existing.id, mtime)
            report.unchanged += 1
            return []
        self.store.set_document_state(kb.id, file.key, DocumentState.EXTRACTING)
        try:
            extracted = self.extract(data, file.path)
        except ExtractionFailed as failure:
            self._fail(file, kind_name, len(data), digest, mtime, failure.reason)
            return []
        document = self._document(file, extracted, len(data), digest, mtime, container=None)
        pending = [self._pending(document, extracted, existing, same_content)]
        if extracted.parts or holds_parts(document.kind):
            pending += self._parts(file, extracted.parts, mtime)
        return pending

    def _document(
        self,
        file: SourceFile,
        extracted: Extracted,
        size: int,
        digest: str,
        mtime: float | None,
        *,
        container: str | None,
        path: str | None = None,
    ) -> NewDocument:
        kind = str(extracted.kind)  # a plain string in the row, whatever the extractor's
        return NewDocument(
            path=path or file.key,
            kind=kind,
            size=size,
            content_hash=digest,
            mtime=mtime,
            title=extracted.title,
            page_count=extracted.page_count,
            encoding=extracted.encoding,
            text=extracted.text,
            source_id=file.source_id,
            display_name=file.display_name if container is None else None,
            container=container,
            metadata=dict(extracted.metadata),
            versions=versions_of(kind),
            regions=tuple(
                Region(el.page, el.start, el.end, el.boxes)
                for el in extracted.elements
                if el.boxes and el.page is not None
            ),
        )

    def _pending(
        self,
        document: NewDocument,
        extracted: Extracted,
        existing: DocumentRecord | None,
        same_content: bool,
    ) -> Pending:
        kb, identity = self.kb, self.identity
        chunks = chunk_document(extracted, kb.chunk_settings)
        chunks = with_languages(chunks, extracted.text, self.detector)
        vectors_only = (
            same_content
            and existing is not None
            and existing.state is not DocumentState.FAILED
            and existing.settings_key == kb.chunk_settings.key
            and existing.identity_key is not None
            and identity is not None
            and existing.identity_key != identity.key
            and kb.identity_key != identity.key
            and not running_versions().stale(existing)  # else its chunks are made again
        )
        return Pending(document, chunks, existing, vectors_only)

    def _parts(
        self, file: SourceFile, parts: tuple[Part, ...], mtime: float | None
    ) -> list[Pending]:
        """The parts of a file just read, as documents: those whose content changed to be
        written, those that failed recorded, those the file no longer holds deleted."""
        stored = {d.path: d for d in self.store.parts_of(self.kb.id, file.key)}
        pending: list[Pending] = []
        seen: set[str] = set()
        for path, part in flatten_parts(file.key, parts):
            seen.add(path)
            existing = stored.get(path)
            if part.extracted is None:
                reason = part.reason or FailureReason.CORRUPT
                kind = document_kind(PurePath(part.name)) or "other"
                if (
                    existing is None
                    or existing.reason != reason.value
                    or existing.versions != versions_of(kind)
                ):
                    failed = NewDocument(
                        path=path,
                        kind=kind,
                        size=part.size,
                        content_hash=part.content_hash,
                        mtime=mtime,
                        source_id=file.source_id,
                        container=file.key,
                        versions=versions_of(kind),
                    )
                    self.report.failed.append((path, reason.value))
                    self.settled(self.store.record_failure(self.kb.id, failed, reason.value))
                continue
            same = existing is not None and existing.content_hash == part.content_hash
            if (
                same
                and existing is not None
                and up_to_date(existing, self.kb, self.identity, stale=self.stale)
            ):
                continue
            document = self._document(
                file,
                part.extracted,
                part.size,
                part.content_hash,
                mtime,
                container=file.key,
                path=path,
            )
            pending.append(self._pending(document, part.extracted, existing, same))
        gone = [d.id for p, d in stored.items() if p not in seen]
        if gone:
            self.store.delete_documents(self.kb.id, gone)
        return pending

    def _leave_out(self, file: SourceFile, existing: DocumentRecord | None, reason: str) -> None:
        """A file whose bytes must not be indexed (a secret, a machine-written file): counted
        by reason, never named in a log; a version indexed before (``existing``), or the row
        recorded for a new path up front, leaves the base."""
        left_out = self.report.left_out
        left_out[reason] = left_out.get(reason, 0) + 1
        stored = existing or self.store.get_document(self.kb.id, file.key)
        if stored is not None:
            self.store.delete_documents(self.kb.id, [stored.id])  # its parts go with it

    def _bytes(self, file: SourceFile) -> tuple[bytes, float | None]:
        """The file's bytes and mtime; the size limit is checked before reading."""
        if file.data is not None:
            data = file.data()
            if len(data) > self.settings.max_file_bytes:
                raise ExtractionFailed(FailureReason.TOO_LARGE)
            return data, None
        stat = file.path.stat()
        if stat.st_size > self.settings.max_file_bytes:
            raise ExtractionFailed(FailureReason.TOO_LARGE)
        return file.path.read_bytes(), stat.st_mtime

    def _fail(
        self,
        file: SourceFile,
        kind: str,
        size: int,
        digest: str,
        mtime: float | None,
        reason: FailureReason,
    ) -> None:
        self.report.failed.append((file.key, reason.value))
        document = NewDocument(
            path=file.key,
            kind=kind,
            size=size,
            content_hash=digest,
            mtime=mtime,
            source_id=file.source_id,
            display_name=file.display_name,
            versions=versions_of(kind),
        )
        self.settled(self.store.record_failure(self.kb.id, document, reason.value))
        if holds_parts(kind):  # what the file held when it last read goes with it
            parts = self.store.parts_of(self.kb.id, file.key)
            if parts:
                self.store.delete_documents(self.kb.id, [part.id for part in parts])


def with_languages(chunks: list[Chunk], text: str, detector: LanguageDetector) -> list[Chunk]:
    """The chunks with the language each passage is written in (a passage of source code
    keeps its programming language; a code block that names none takes its document's): the
    keyword arm analyses it in that language, and a search may be narrowed to it."""
    pending = [c for c in chunks if c.position.language is None]
    if not pending:
        return chunks
    told: list[str] = []  # the document's language, told once, when a passage needs it

    def document() -> str:
        if not told:
            told.append(document_language(text, detector))
        return told[0]

    languages = {
        c.id: document()
        if c.position.content_kind is ContentKind.CODE
        else passage_language(c.text, document, detector)
        for c in pending
    }
    return [
        replace(c, position=replace(c.position, language=languages[c.id]))
        if c.id in languages
        else c
        for c in chunks
    ]


def _stat(file: SourceFile) -> tuple[int, float | None]:
    """A file's size and modification time, without reading it (an upload has no time)."""
    if file.data is not None:
        return 0, None
    try:
        stat = file.path.stat()
    except OSError:
        return 0, None
    return stat.st_size, stat.st_mtime


def flatten_parts(container: str, parts: tuple[Part, ...]) -> list[tuple[str, Part]]:
    """Every part of a file, nested ones too, with its path: the container's path, then each
    name down to it (``mail.eml › forwarded.eml › report.pdf``). Pure."""
    found: list[tuple[str, Part]] = []
    for part in parts:
        path = f"{container}{CITATION_SEPARATOR}{part.name}"
        found.append((path, part))
        if part.extracted is not None and part.extracted.parts:
            found += flatten_parts(path, part.extracted.parts)
    return found
