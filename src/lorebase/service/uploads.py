"""Uploaded files: :class:`Uploads` checks each one, stores it sealed (through
:class:`Originals`), queues it, and indexes it when a queue worker runs its job — under the
ingestion lock over the embedded store — then settles the base's state and announces it. It
also fails the uploads that cannot be indexed (an original gone missing, a job cut off too
often) and hands a re-embed's pass, or a sync, the uploads it must read again."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path, PurePath

from lorebase.accounts.access import Caller
from lorebase.embed.registry import Embedders
from lorebase.errors import (
    Conflict,
    InvalidInput,
    LorebaseError,
    NotFound,
    Unsupported,
)
from lorebase.events import EventBus
from lorebase.formats import document_kind, supported_labels
from lorebase.ingest.files import SourceFile, outermost
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.queue import JobQueue
from lorebase.ingest.report import IngestReport
from lorebase.ingest.versions import running_versions, versions_of
from lorebase.lock import IngestLock
from lorebase.names import checked_name
from lorebase.service.access import Access
from lorebase.service.documents import admit
from lorebase.service.originals import Originals
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument, Store, new_document_id
from lorebase.store.states import DocumentState, KbState
from lorebase.types import FailureReason


class Uploads:
    """Uploaded files, from the request that brings one to the worker that indexes it."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedders: Embedders,
        ingestor: Ingestor,
        lock: IngestLock,
        events: EventBus,
        queue: JobQueue,
        access: Access,
        originals: Originals,
    ) -> None:
        self._settings = settings
        self._store = store
        self._embedders = embedders
        self._ingestor = ingestor
        self._lock = lock
        self._events = events
        self._queue = queue
        self._access = access
        self._originals = originals

    @staticmethod
    def upload_kind(filename: str) -> tuple[str, str]:
        """An upload's own name (the last part of the name it was sent with) and its kind;
        ``InvalidInput`` for a name that would not show as itself (:mod:`lorebase.names`),
        ``Unsupported`` for a kind lorebase does not read. Checks nothing else."""
        name = checked_name(PurePath(filename.replace("\\", "/")).name, "file name")
        kind = document_kind(PurePath(name)) if name not in ("", ".", "..") else None
        if kind is None:
            raise Unsupported(
                f"this file type is not supported; upload {supported_labels()} files, "
                "named with their extension"
            )
        return name, kind

    def upload(
        self,
        kb: KnowledgeBase,
        filename: str,
        chunks: Iterable[bytes],
        *,
        caller: Caller | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Store one uploaded file encrypted and queue it. Returns (document, created); the
        same bytes uploaded again to the same base return the existing document. A full queue
        answers ``Overloaded`` with the file stored: the sweep queues it later."""
        name, kind = self.upload_kind(filename)
        record, created = self.store_upload(
            kb, name, kind, self._read_limited(chunks), caller=caller, action="upload_document"
        )
        if created:
            admit(self._queue, kb.id, record.id)
        return record, created

    def store_upload(
        self,
        kb: KnowledgeBase,
        name: str,
        kind: str,
        data: bytes,
        *,
        caller: Caller | None,
        action: str,
    ) -> tuple[DocumentRecord, bool]:
        """Store ``data`` sealed as a pending upload named ``name`` (checked by the caller),
        audited as ``action``, without queueing it: (document, created); the same bytes
        already in the base give the existing document (its original stored again if it
        was lost)."""
        digest = hashlib.sha256(data).hexdigest()
        existing = self._store.find_by_hash(kb.id, digest)
        if existing is not None:
            self._repair(kb, existing, data)
            return existing, False
        # The original first, then its row: a crash in between leaves an orphan blob (swept at
        # the next start), never a document without its bytes.
        document_id = new_document_id()
        self._originals.blobs.put(document_id, data)
        try:
            record = self._store.create_upload(
                kb.id,
                NewDocument(
                    path=f"uploads/{document_id}",
                    kind=kind,
                    size=len(data),
                    content_hash=digest,
                    display_name=self._originals.seal_name(name),
                ),
                document_id,
            )
        except BaseException as error:
            with contextlib.suppress(OSError):
                self._originals.blobs.delete(document_id)
            twin = self._store.find_by_hash(kb.id, digest) if isinstance(error, Conflict) else None
            if twin is None:
                raise
            return twin, False  # the same bytes arrived twice at once: one document
        self._events.publish("document", kb.id, document_id=record.id, state="pending")
        self._access.audit(caller, action, f"document:{record.id}")
        return record, True

    def _read_limited(self, chunks: Iterable[bytes]) -> bytes:
        limit = self._settings.serve.max_upload_bytes
        parts: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise InvalidInput(f"the file is larger than the upload limit ({limit} bytes)")
            parts.append(chunk)
        return b"".join(parts)

    def _repair(self, kb: KnowledgeBase, existing: DocumentRecord, data: bytes) -> None:
        """The same bytes uploaded again: if the stored original is gone (an upload cut short
        by an older version, a lost file), store it again and index the document afresh."""
        if not existing.uploaded or self._originals.blobs.exists(existing.id):
            return
        self._originals.blobs.put(existing.id, data)
        self._store.set_document_state(kb.id, existing.path, DocumentState.PENDING)
        self._events.publish("document", kb.id, document_id=existing.id, state="pending")
        admit(self._queue, kb.id, existing.id)

    def fail_lost_uploads(self) -> int:
        """Uploads waiting to be indexed whose stored original is missing fail now, with the
        reason ``missing_original`` (uploading the same bytes again repairs them), instead of
        being queued again and again. Returns how many."""
        lost = 0
        for kb_id, document_id in self._store.list_uploads(DocumentState.PENDING):
            if not self._originals.blobs.exists(document_id):
                self._fail_lost(kb_id, document_id)
                lost += 1
        return lost

    def abandon_upload(self, kb_id: int, document_id: str) -> None:
        """An upload whose job was cut off too often (its worker killed each time) fails with
        the reason ``worker_lost`` instead of being tried again."""
        self._fail_upload(kb_id, document_id, FailureReason.WORKER_LOST)

    def _fail_lost(self, kb_id: int, document_id: str) -> None:
        self._fail_upload(kb_id, document_id, FailureReason.MISSING_ORIGINAL)

    def _fail_upload(self, kb_id: int, document_id: str, reason: FailureReason) -> None:
        try:
            document = self._store.get_document_by_id(kb_id, document_id)
        except NotFound:  # deleted meanwhile
            return
        self._store.record_failure(
            kb_id,
            NewDocument(
                path=document.path,
                kind=document.kind,
                size=document.size,
                content_hash=document.content_hash,
                source_id=document.source_id,
                display_name=document.display_name,
                container=document.container,
                # Not a reading's failure: reading it again with another version cannot help.
                versions=versions_of(document.kind),
            ),
            reason.value,
        )
        self._events.publish(
            "document", kb_id, document_id=document_id, state="failed", reason=reason.value
        )

    def index_upload(self, kb_id: int, document_id: str) -> None:
        """Index one stored upload (a queue worker's job)."""
        document = self._store.find_document(document_id)
        if document is None or document.kb_id != kb_id:
            return
        if document.state in (DocumentState.INDEXED, DocumentState.FAILED):
            return  # done already: a job run again after its worker died past the commit
        if not self._originals.blobs.exists(document_id):
            self._fail_lost(kb_id, document_id)
            return
        kb = self._store.get_kb_by_id(kb_id, totals=False)  # the pass reads it as it is then
        file = self._upload_file(document)
        self._events.publish("document", kb_id, document_id=document_id, state="extracting")
        # Over the embedded store uploads are indexed under the ingestion lock (one indexer);
        # over a shared store every process indexes, each job held by its lease.
        with contextlib.nullcontext() if self._settings.shared_store else self._lock:
            self._store.set_kb_state(kb_id, KbState.INDEXING, started=True)
            report = self._ingestor.process(kb, [file])
        final = self._store.find_document(document_id)
        if final is not None and final.state is DocumentState.EMBEDDING:
            # Its vectors were refused (the base switched embedder meanwhile): a later sweep
            # indexes it again, with the base's embedder as it is then.
            self._store.set_document_state(kb_id, final.path, DocumentState.PENDING)
            final = self._store.find_document(document_id)
        # Indexed or failed was announced as it happened (the ingestor's on_document); say
        # where it stopped otherwise (back to pending: the embedder was gone).
        if final is not None and final.state not in (DocumentState.INDEXED, DocumentState.FAILED):
            self._events.publish(
                "document",
                kb_id,
                document_id=document_id,
                state=final.state.value,
                reason=final.reason,
            )
        self._settle(kb_id, report)

    def _upload_file(self, document: DocumentRecord) -> SourceFile:
        """A stored upload as a file a pass reads (its bytes decrypted from the blob store)."""
        document_id = document.id
        return SourceFile(
            path=Path(PurePath(self._originals.display_name(document)).name or document.path),
            key=document.path,
            data=lambda: self._originals.blobs.get(document_id),
            display_name=document.display_name,
        )

    def original_file(self, document: DocumentRecord) -> SourceFile | None:
        """An upload as a file a pass reads, from its stored original (None: it is missing)."""
        if not self._originals.blobs.exists(document.id):
            return None
        return self._upload_file(document)

    def stale_files(self, kb: KnowledgeBase) -> list[SourceFile]:
        """The base's uploads an older version made (or holding a part one made), to read
        again from their stored originals with a sync. None when the originals cannot be
        opened here (no data key): a server with the key re-reads them in the background."""
        stale = self._store.list_stale(running_versions(), limit=2**31 - 1, kb_ids=[kb.id])
        if not any(d.uploaded or d.container for d in stale):
            return []
        by_path = {d.path: d for d in self._store.list_documents(kb.id)}
        uploads: dict[str, DocumentRecord] = {}
        for document in stale:
            top = outermost(document, by_path.get)
            if top.uploaded:
                uploads[top.path] = top
        try:
            return [
                file
                for _, document in sorted(uploads.items())
                if (file := self.original_file(document)) is not None
            ]
        except LorebaseError:  # no data key here, or not the uploads' one
            return []

    def to_reembed(self, kb: KnowledgeBase) -> list[SourceFile]:
        """The base's indexed uploads whose vectors are not made by the embedder it is moving
        to (a re-embed's pass reads them with the folders' files). None when that embedder
        does not answer: the pass finds out and says so."""
        try:
            embedder = self._embedders.indexing(kb)
            key = embedder.identity.key if embedder is not None else None
        except LorebaseError:  # not configured, or down: the pass says so
            return []
        return [
            self._upload_file(document)
            for document in self._store.list_documents(kb.id, DocumentState.INDEXED)
            if document.uploaded
            and document.identity_key != key
            and self._originals.blobs.exists(document.id)
        ]

    def _settle(self, kb_id: int, report: IngestReport) -> None:
        """The base's state once an upload is done — waiting for the embedder when it was
        gone, ready (a pass finished) when no upload of the base is left to index — and the
        ``knowledge_base`` event with its totals, from one count of its documents."""
        fresh = self._store.get_kb_by_id(kb_id)
        state = fresh.state
        if report.stopped:
            state = KbState.WAITING
            reason = f"embedder_unavailable: {report.stopped}"
            self._store.set_kb_state(kb_id, state, reason, finished=True)
        elif fresh.pending == 0:
            state = KbState.READY
            self._store.set_kb_state(kb_id, state, finished=True)
        self._events.publish(
            "knowledge_base",
            kb_id,
            state=state.value,
            documents=fresh.documents,
            chunks=fresh.chunks,
        )

    def upload_ids(self) -> set[str]:
        """The ids of every upload, in any base (what the originals may hold)."""
        return {document_id for _, document_id in self._store.list_uploads()}
