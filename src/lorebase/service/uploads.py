"""Uploaded files: stored encrypted under the data key, queued, indexed by the queue's
workers; their own names sealed; the data key rotated."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path, PurePath

from lorebase.accounts.access import Caller
from lorebase.errors import Conflict, InvalidInput
from lorebase.extract.registry import document_kind, is_supported
from lorebase.ingest.pipeline import SourceFile
from lorebase.service.documents import Documents
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import DataKey, open_text, seal_text
from lorebase.vault.rotation import NAME_CONTEXT

BLOBS_FOLDER = "blobs"


class Uploads(Documents):
    _data_key: DataKey | None
    _blobs: BlobStore | None

    def _init_uploads(self, data_key: DataKey | None = None) -> None:
        self._data_key = data_key
        self._blobs = None

    @property
    def data_key(self) -> DataKey:
        """The key that seals uploads and their names (``LOREBASE_DATA_KEY``, else the key
        file in the data directory, created on first use)."""
        if self._data_key is None:
            self._data_key = DataKey.load(self.settings.data_dir, self.settings.data_key)
        return self._data_key

    @property
    def blobs(self) -> BlobStore:
        """The encrypted originals of uploaded files."""
        if self._blobs is None:
            self._blobs = BlobStore(self.settings.data_dir / BLOBS_FOLDER, self.data_key)
        return self._blobs

    def display_name(self, document: DocumentRecord) -> str:
        """What to show for a document: an upload's (decrypted) file name, else its path."""
        if document.display_name:
            return open_text(self.data_key, document.display_name, NAME_CONTEXT)
        return document.path

    def upload_name(self, document_id: str) -> str | None:
        """An uploaded document's own file name, by id (None: no such upload)."""
        document = self.store.find_document(document_id)
        if document is None or not document.uploaded:
            return None
        return self.display_name(document)

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
        name = PurePath(filename.replace("\\", "/")).name or "upload"
        data = self._read_limited(chunks)
        digest = hashlib.sha256(data).hexdigest()
        existing = self.store.find_by_hash(kb.id, digest)
        if existing is not None:
            return existing, False
        kind = document_kind(PurePath(name))
        suffix = PurePath(name).suffix.lower() if is_supported(PurePath(name)) else ".bin"
        try:
            record = self.store.create_upload(
                kb.id,
                NewDocument(
                    path=f"uploads/{digest[:24]}{suffix}",
                    kind=kind.value if kind else "other",
                    size=len(data),
                    content_hash=digest,
                    display_name=seal_text(self.data_key, name, NAME_CONTEXT),
                ),
            )
        except Conflict:  # the same bytes arrived twice at once: one document
            twin = self.store.find_by_hash(kb.id, digest)
            if twin is None:
                raise
            return twin, False
        self.blobs.put(record.id, data)
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

    def _index_upload(self, kb_id: int, document_id: str) -> None:
        """Index one stored upload (a queue worker's job)."""
        document = self.store.find_document(document_id)
        if document is None or document.kb_id != kb_id:
            return
        kb = self.store.get_kb_by_id(kb_id)
        display = self.display_name(document)
        file = SourceFile(
            path=Path(PurePath(display).name or document.path),
            key=document.path,
            data=lambda: self.blobs.get(document_id),
            display_name=document.display_name,
        )
        self.events.publish("document", kb_id, document_id=document_id, state="extracting")
        with self.lock:
            self.ingestor.process(kb, [file])
        final = self.store.find_document(document_id)
        if final is not None:
            self.events.publish("document", kb_id, document_id=document_id,
                                state=final.state.value, reason=final.reason)  # fmt: skip

    def upload_ids(self) -> set[str]:
        return {document_id for _, document_id in self.store.list_uploads()}
