"""Reading one file of a pass: its bytes within the size limit, screened for what must not be
indexed, extracted (in the bounded worker pool) and chunked, into a :class:`Pending` document
for the writes; or, when it cannot be read, its failure recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np

from lorebase.chunk import chunk_document
from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import ExtractionFailed
from lorebase.extract.base import content_hash
from lorebase.extract.formats import document_kind
from lorebase.extract.registry import extractor_for
from lorebase.ingest.files import SourceFile, up_to_date
from lorebase.ingest.report import IngestReport
from lorebase.ingest.screening import screen
from lorebase.settings import ExtractSettings
from lorebase.store.base import (
    DocumentRecord,
    Documents,
    DocumentState,
    KnowledgeBase,
    NewDocument,
)
from lorebase.types import Chunk, Extracted, FailureReason


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
    reads a file whose stored version failed again."""

    store: Documents
    settings: ExtractSettings
    extract: Callable[[bytes, PurePath], Extracted]
    settled: Callable[[DocumentRecord], None]
    kb: KnowledgeBase
    identity: EmbedderIdentity | None
    report: IngestReport
    full: bool = field(kw_only=True)

    def read(self, file: SourceFile, existing: DocumentRecord | None) -> Pending | None:
        """Read, extract and chunk one file; None when unchanged or failed."""
        kb, report = self.kb, self.report
        kind = document_kind(file.path)
        kind_name = kind or "other"
        try:
            extractor_for(file.path, self.settings)
            data, mtime = self._bytes(file)
        except ExtractionFailed as failure:
            size = file.path.stat().st_size if file.data is None and file.path.exists() else 0
            self._fail(file, kind_name, size, "", None, failure.reason)
            return None
        except OSError:
            self._fail(file, kind_name, 0, "", None, FailureReason.UNREADABLE)
            return None
        left_out = screen(file.path.name, kind, data)
        if left_out is not None:
            self._leave_out(file, existing, left_out)
            return None
        digest = content_hash(data)
        same_content = existing is not None and existing.content_hash == digest
        if (
            existing is not None
            and same_content
            and up_to_date(existing, kb, self.identity)
            and not (self.full and existing.state is DocumentState.FAILED)
        ):
            if existing.mtime != mtime:
                self.store.touch_document(kb.id, existing.id, mtime)
            report.unchanged += 1
            return None
        self.store.set_document_state(kb.id, file.key, DocumentState.EXTRACTING)
        try:
            extracted = self.extract(data, file.path)
        except ExtractionFailed as failure:
            self._fail(file, kind_name, len(data), digest, mtime, failure.reason)
            return None
        chunks = chunk_document(extracted, kb.chunk_settings)
        document = NewDocument(
            path=file.key,
            kind=str(extracted.kind),  # a plain string in the row, whatever the extractor's
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
        identity = self.identity
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
        return Pending(document, chunks, existing, vectors_only)

    def _leave_out(self, file: SourceFile, existing: DocumentRecord | None, reason: str) -> None:
        """A file whose bytes must not be indexed (a secret, a machine-written file): counted
        by reason, never named in a log; a version indexed before (``existing``), or the row
        recorded for a new path up front, leaves the base."""
        left_out = self.report.left_out
        left_out[reason] = left_out.get(reason, 0) + 1
        stored = existing or self.store.get_document(self.kb.id, file.key)
        if stored is not None:
            self.store.delete_documents(self.kb.id, [stored.id])

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
        self.settled(self.store.record_failure(self.kb.id, document, reason.value))
