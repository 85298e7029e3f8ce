"""Uploaded files: stored encrypted under the data key, queued, indexed by the queue's
workers; their own names sealed; the data key rotated."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path, PurePath

from lorebase.accounts.access import Caller
from lorebase.errors import (
    Conflict,
    InvalidInput,
    LorebaseError,
    NotFound,
    ServerFault,
    Unsupported,
)
from lorebase.extract.formats import document_kind, supported_labels
from lorebase.ingest.files import SourceFile
from lorebase.ingest.report import IngestReport
from lorebase.names import checked_name
from lorebase.service.documents import Documents
from lorebase.service.listing import DocumentListing, DocumentPage, page_of
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KbState,
    KnowledgeBase,
    NewDocument,
    new_document_id,
)
from lorebase.types import FailureReason
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE, DataKey, open_text, seal_text
from lorebase.vault.rotation import NAME_CONTEXT, NEXT_SUFFIX
from lorebase.vault.storage import BlobStorage, FileBlobStorage

BLOBS_FOLDER = "blobs"


class Uploads(Documents):
    _data_key: DataKey | None
    _blobs: BlobStore | None
    _blob_storage: BlobStorage

    def _init_uploads(
        self, data_key: DataKey | None = None, blob_storage: BlobStorage | None = None
    ) -> None:
        self._data_key = data_key
        self._blobs = None
        self._blob_storage = (
            blob_storage
            if blob_storage is not None
            else FileBlobStorage(self.settings.data_dir / BLOBS_FOLDER)
        )

    @property
    def data_key(self) -> DataKey:
        """The key that seals uploads and their names: ``LOREBASE_DATA_KEY``, else the key
        file in the data directory. A new key is made only while nothing is sealed yet: a
        missing key, or one that is not the key the stored uploads were sealed with, is a
        :class:`~lorebase.errors.ServerFault` that says what to restore."""
        if self._data_key is None:
            data_dir, configured = self.settings.data_dir, self.settings.data_key
            if self.settings.shared_store and not configured:
                # A key file made here would be this machine's alone: every other process
                # would seal with a key of its own.
                raise InvalidInput(
                    "with a PostgreSQL store every lorebase process needs the same data key: "
                    "set LOREBASE_DATA_KEY in each (make one with `lorebase keys new-data-key`)"
                )
            sealed = self._sealed_blobs()
            key = DataKey.load(data_dir, configured, create=not sealed)
            self._check_key(key, sealed)
            self._data_key = key
        return self._data_key

    def _sealed_blobs(self) -> list[str]:
        return sorted(BlobStore.stored_ids(self._blob_storage))

    def _check_key(self, key: DataKey, sealed: list[str]) -> None:
        """The key must be the one the uploads were sealed with (their headers record its
        id). A rotation cut short leaves blobs under two keys: finishing it sorts them out."""
        data_dir = self.settings.data_dir
        if not sealed or (data_dir / (KEY_FILE + NEXT_SUFFIX)).exists():
            return
        recorded = BlobStore.stored_key_id(self._blob_storage, sealed[0])
        if recorded != key.id:
            raise ServerFault(
                f"the data key (id {key.id}) is not the key the uploads were sealed with "
                f"(id {recorded}); restore the right key file or LOREBASE_DATA_KEY"
            )

    @property
    def blobs(self) -> BlobStore:
        """The encrypted originals of uploaded files."""
        if self._blobs is None:
            self._blobs = BlobStore(self._blob_storage, self.data_key)
        return self._blobs

    def display_name(self, document: DocumentRecord) -> str:
        """What to show for a document: an upload's (decrypted) file name, else its path."""
        if document.display_name:
            return open_text(self.data_key, document.display_name, NAME_CONTEXT)
        return document.path

    def document_page(self, kb: KnowledgeBase | str, listing: DocumentListing) -> DocumentPage:
        """The page of the base's documents ``listing`` asks for, names (decrypted for
        uploads) read only where its filter or order needs them (see :func:`page_of`)."""
        return page_of(self.documents(kb, listing.state), listing, self.display_name)

    def upload_name(self, document_id: str) -> str | None:
        """An uploaded document's own file name, by id (None: no such upload)."""
        document = self.store.find_document(document_id)
        if document is None or not document.uploaded:
            return None
        return self.display_name(document)

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
        data = self._read_limited(chunks)
        digest = hashlib.sha256(data).hexdigest()
        existing = self.store.find_by_hash(kb.id, digest)
        if existing is not None:
            self._repair(kb, existing, data)
            return existing, False
        # The original first, then its row: a crash in between leaves an orphan blob (swept at
        # the next start), never a document without its bytes.
        document_id = new_document_id()
        self.blobs.put(document_id, data)
        try:
            record = self.store.create_upload(
                kb.id,
                NewDocument(
                    path=f"uploads/{document_id}",
                    kind=kind,
                    size=len(data),
                    content_hash=digest,
                    display_name=seal_text(self.data_key, name, NAME_CONTEXT),
                ),
                document_id,
            )
        except BaseException as error:
            with contextlib.suppress(OSError):
                self.blobs.delete(document_id)
            twin = self.store.find_by_hash(kb.id, digest) if isinstance(error, Conflict) else None
            if twin is None:
                raise
            return twin, False  # the same bytes arrived twice at once: one document
        self.events.publish("document", kb.id, document_id=record.id, state="pending")
        self.audit(caller, "upload_document", f"document:{record.id}")
        self._admit(kb.id, record.id)
        return record, True

    def _read_limited(self, chunks: Iterable[bytes]) -> bytes:
        limit = self.settings.serve.max_upload_bytes
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
        if not existing.uploaded or self.blobs.exists(existing.id):
            return
        self.blobs.put(existing.id, data)
        self.store.set_document_state(kb.id, existing.path, DocumentState.PENDING)
        self.events.publish("document", kb.id, document_id=existing.id, state="pending")
        self._admit(kb.id, existing.id)

    def fail_lost_uploads(self) -> int:
        """Uploads waiting to be indexed whose stored original is missing fail now, with the
        reason ``missing_original`` (uploading the same bytes again repairs them), instead of
        being queued again and again. Returns how many."""
        lost = 0
        for kb_id, document_id in self.store.list_uploads(DocumentState.PENDING):
            if not self.blobs.exists(document_id):
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
            document = self.store.get_document_by_id(kb_id, document_id)
        except NotFound:  # deleted meanwhile
            return
        self.store.record_failure(
            kb_id,
            NewDocument(
                path=document.path,
                kind=document.kind,
                size=document.size,
                content_hash=document.content_hash,
                display_name=document.display_name,
            ),
            reason.value,
        )
        self.events.publish(
            "document", kb_id, document_id=document_id, state="failed", reason=reason.value
        )

    def _index_upload(self, kb_id: int, document_id: str) -> None:
        """Index one stored upload (a queue worker's job)."""
        document = self.store.find_document(document_id)
        if document is None or document.kb_id != kb_id:
            return
        if document.state in (DocumentState.INDEXED, DocumentState.FAILED):
            return  # done already: a job run again after its worker died past the commit
        if not self.blobs.exists(document_id):
            self._fail_lost(kb_id, document_id)
            return
        kb = self.store.get_kb_by_id(kb_id, totals=False)  # the pass reads it as it is then
        file = self._upload_file(document)
        self.events.publish("document", kb_id, document_id=document_id, state="extracting")
        # Over the embedded store uploads are indexed under the ingestion lock (one indexer);
        # over a shared store every process indexes, each job held by its lease.
        with contextlib.nullcontext() if self.settings.shared_store else self.lock:
            self.store.set_kb_state(kb_id, KbState.INDEXING, started=True)
            report = self.ingestor.process(kb, [file])
        final = self.store.find_document(document_id)
        if final is not None and final.state is DocumentState.EMBEDDING:
            # Its vectors were refused (the base switched embedder meanwhile): a later sweep
            # indexes it again, with the base's embedder as it is then.
            self.store.set_document_state(kb_id, final.path, DocumentState.PENDING)
            final = self.store.find_document(document_id)
        # Indexed or failed was announced as it happened (Lorebase._settled); say where it
        # stopped otherwise (back to pending: the embedder was gone).
        if final is not None and final.state not in (DocumentState.INDEXED, DocumentState.FAILED):
            self.events.publish(
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
            path=Path(PurePath(self.display_name(document)).name or document.path),
            key=document.path,
            data=lambda: self.blobs.get(document_id),
            display_name=document.display_name,
        )

    def _uploads_to_reembed(self, kb: KnowledgeBase) -> list[SourceFile]:
        """The base's indexed uploads whose vectors are not made by the embedder it is moving
        to (a re-embed's pass reads them with the folders' files). None when that embedder
        does not answer: the pass finds out and says so."""
        try:
            embedder = self.embedders.indexing(kb)
            key = embedder.identity.key if embedder is not None else None
        except LorebaseError:  # not configured, or down: the pass says so
            return []
        return [
            self._upload_file(document)
            for document in self.store.list_documents(kb.id, DocumentState.INDEXED)
            if document.uploaded and document.identity_key != key and self.blobs.exists(document.id)
        ]

    def _settle(self, kb_id: int, report: IngestReport) -> None:
        """The base's state once an upload is done — waiting for the embedder when it was
        gone, ready (a pass finished) when no upload of the base is left to index — and the
        ``knowledge_base`` event with its totals, from one count of its documents."""
        fresh = self.store.get_kb_by_id(kb_id)
        state = fresh.state
        if report.stopped:
            state = KbState.WAITING
            reason = f"embedder_unavailable: {report.stopped}"
            self.store.set_kb_state(kb_id, state, reason, finished=True)
        elif fresh.pending == 0:
            state = KbState.READY
            self.store.set_kb_state(kb_id, state, finished=True)
        self.events.publish(
            "knowledge_base",
            kb_id,
            state=state.value,
            documents=fresh.documents,
            chunks=fresh.chunks,
        )

    def _publish_totals(self, kb_id: int) -> None:
        """A ``knowledge_base`` event with the base's state and totals (no names)."""
        fresh = self.store.get_kb_by_id(kb_id)
        self.events.publish(
            "knowledge_base",
            kb_id,
            state=fresh.state.value,
            documents=fresh.documents,
            chunks=fresh.chunks,
        )

    def upload_ids(self) -> set[str]:
        return {document_id for _, document_id in self.store.list_uploads()}
