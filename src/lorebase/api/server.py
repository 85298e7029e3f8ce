"""What the HTTP routes stand on: callers and what they may see, uploads, the queue, events.

Routes stay thin: they parse, call a method here (or on :class:`~lorebase.app.Lorebase`), and
shape the answer. Every lookup of a knowledge base or document goes through :meth:`kb_for` /
:meth:`document_for`, which answer 404 for anything the caller may not see — exactly like a
missing one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

from lorebase.accounts.access import Caller, can_change, can_create, can_see
from lorebase.accounts.base import AccountStore, Role, User
from lorebase.api.events import EventBus
from lorebase.api.metrics import Metrics
from lorebase.app import Lorebase
from lorebase.blobs import BlobStore
from lorebase.crypto import DataKey, open_text, seal_text
from lorebase.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    Overloaded,
    Unauthorized,
)
from lorebase.extract.registry import document_kind, is_supported
from lorebase.ingest.pipeline import SourceFile
from lorebase.ingest.queue import IngestQueue, Job
from lorebase.keyring import NAME_CONTEXT
from lorebase.settings import MB
from lorebase.store.base import DocumentRecord, DocumentState, KnowledgeBase, NewDocument, Scope

RETRY_AFTER_SECONDS = 5
NO_KB = "no such knowledge base"
NO_DOCUMENT = "no such document"
# The identity of requests when keys are off (loopback only): a local administrator.
LOCAL_USER = User(id=0, name="local", role=Role.ADMIN, created_at=0.0)


@dataclass(frozen=True, slots=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 7700
    auth: bool = True
    max_upload_bytes: int = 64 * MB
    queue_size: int = 256
    workers: int = max(1, os.cpu_count() or 1)
    rescan_seconds: float = 60.0
    watch: bool = True

    def __post_init__(self) -> None:
        if not self.auth and not is_loopback(self.host):
            raise InvalidInput(
                f"refusing to serve on {self.host} without API keys: bind to 127.0.0.1 or "
                "turn keys on"
            )


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class Server:
    def __init__(
        self,
        lb: Lorebase,
        accounts: AccountStore,
        key: DataKey,
        settings: ServeSettings,
    ) -> None:
        self.lb = lb
        self.accounts = accounts
        self.key = key
        self.blobs = BlobStore(lb.settings.data_dir / "blobs", key)
        self.settings = settings
        self.events = EventBus()
        self.queue = IngestQueue(
            self._process_upload,
            self._pending_uploads,
            size=settings.queue_size,
            workers=settings.workers,
        )
        self.metrics = Metrics(
            self._documents_by_state,
            lambda: self.queue.depth,
            lambda: (self.queue.stats.accepted, self.queue.stats.rejected),
        )
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- life --------------------------------------------------------------------------------
    def start(self) -> None:
        """Take the ingestion lock, sweep orphaned blobs, start workers and the watcher."""
        self.lb.lock.acquire()
        self.lb.store.reset_unfinished()
        # Holding the lock, no upload is half-stored: orphans of any age can go.
        self.blobs.sweep_orphans(self._upload_ids(), grace=0)
        self.queue.start()
        self.queue.sweep_now()
        if self.settings.watch:
            self._watcher = threading.Thread(target=self._watch, name="lorebase-watch",
                                             daemon=True)  # fmt: skip
            self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        self.queue.stop()
        if self._watcher is not None:
            self._watcher.join(timeout=30)
        self.lb.lock.release()

    def _watch(self) -> None:
        def on_report(kb: KnowledgeBase, report: object) -> None:
            fresh = self.lb.store.get_kb_by_id(kb.id)
            self.events.publish("knowledge_base", kb.id, state=fresh.state.value,
                                documents=fresh.documents, chunks=fresh.chunks)  # fmt: skip

        self.lb.watch(stop=self._stop, rescan_seconds=self.settings.rescan_seconds,
                      on_report=on_report)  # fmt: skip

    # -- callers -----------------------------------------------------------------------------
    def caller(self, key: str | None) -> Caller:
        if not self.settings.auth:
            return Caller(LOCAL_USER)
        user = self.accounts.resolve_key(key) if key else None
        if user is None:
            raise Unauthorized("a valid API key is required: send `Authorization: Bearer KEY`")
        return Caller(user, self.accounts.memberships(user.id))

    def visible_kbs(self, caller: Caller, *, totals: bool = False) -> list[KnowledgeBase]:
        """The bases the caller may see; with their totals only when asked (they cost a read
        of every document row)."""
        return [kb for kb in self.lb.store.list_kbs(totals=totals) if can_see(caller, kb)]

    def kb_for(
        self, caller: Caller, kb_id: int, *, write: bool = False, totals: bool = False
    ) -> KnowledgeBase:
        try:
            kb = self.lb.store.get_kb_by_id(kb_id, totals=totals)
        except NotFound:
            raise NotFound(NO_KB) from None
        if not can_see(caller, kb):
            raise NotFound(NO_KB)
        if write and not can_change(caller, kb):
            raise Forbidden("you may read this knowledge base but not change it")
        return kb

    def kb_named(self, caller: Caller, name: str) -> KnowledgeBase:
        for kb in self.visible_kbs(caller):
            if kb.name == name:
                return kb
        raise NotFound(NO_KB)

    def document_for(
        self, caller: Caller, document_id: str, *, write: bool = False
    ) -> tuple[KnowledgeBase, DocumentRecord]:
        document = self.lb.store.find_document(document_id)
        if document is None:
            raise NotFound(NO_DOCUMENT)
        try:
            kb = self.kb_for(caller, document.kb_id, write=write)
        except NotFound:
            raise NotFound(NO_DOCUMENT) from None
        return kb, document

    def check_create(self, caller: Caller, scope: Scope, team_id: int | None) -> None:
        if not can_create(caller, scope, team_id):
            raise Forbidden("global bases are created by admins, team bases by the team's admins")

    def display_name(self, document: DocumentRecord) -> str:
        """What to show for a document: an upload's (decrypted) file name, else its path."""
        if document.display_name:
            return open_text(self.key, document.display_name, NAME_CONTEXT)
        return document.path

    def upload_name(self, document_id: str) -> str | None:
        """An uploaded document's own file name, by id (None: no such upload)."""
        document = self.lb.store.find_document(document_id)
        if document is None or not document.uploaded:
            return None
        return self.display_name(document)

    def audit(self, caller: Caller, action: str, target: str) -> None:
        self.accounts.audit(caller.user.name, action, target)

    # -- uploads -----------------------------------------------------------------------------
    def upload(
        self, caller: Caller, kb: KnowledgeBase, filename: str, chunks: Iterable[bytes]
    ) -> tuple[DocumentRecord, bool]:
        """Store one uploaded file encrypted and queue it. Returns (document, created); the
        same bytes uploaded again to the same base return the existing document."""
        name = PurePath(filename.replace("\\", "/")).name or "upload"
        data = self._read_limited(chunks)
        digest = hashlib.sha256(data).hexdigest()
        existing = self.lb.store.find_by_hash(kb.id, digest)
        if existing is not None:
            return existing, False
        kind = document_kind(PurePath(name))
        suffix = PurePath(name).suffix.lower() if is_supported(PurePath(name)) else ".bin"
        try:
            record = self.lb.store.create_upload(
                kb.id,
                NewDocument(
                    path=f"uploads/{digest[:24]}{suffix}",
                    kind=kind.value if kind else "other",
                    size=len(data),
                    content_hash=digest,
                    display_name=seal_text(self.key, name, NAME_CONTEXT),
                ),
            )
        except Conflict:  # the same bytes arrived twice at once: one document
            twin = self.lb.store.find_by_hash(kb.id, digest)
            if twin is None:
                raise
            return twin, False
        self.blobs.put(record.id, data)
        self.events.publish("document", kb.id, document_id=record.id, state="pending")
        if not self.queue.admit(kb.id, record.id):
            raise Overloaded(
                "the ingestion queue is full; the file is stored and will be indexed, or "
                "retry later",
                RETRY_AFTER_SECONDS,
            )
        return record, True

    def requeue(self, kb: KnowledgeBase, document: DocumentRecord) -> None:
        self.lb.store.set_document_state(kb.id, document.path, DocumentState.PENDING)
        if document.uploaded:
            if not self.queue.admit(kb.id, document.id):
                raise Overloaded("the ingestion queue is full; retry later", RETRY_AFTER_SECONDS)
        else:
            threading.Thread(target=self.lb.sync, kwargs={"kb": kb.name}, daemon=True).start()

    def delete_document(self, kb: KnowledgeBase, document: DocumentRecord) -> None:
        """Rows first (one transaction), then the blob; a blob that will not go is left for
        the orphan sweep at the next start, and the delete still succeeds."""
        self.lb.store.delete_document(kb.id, document.id)
        with contextlib.suppress(OSError):
            self.blobs.delete(document.id)
        self.events.publish("document", kb.id, document_id=document.id, state="deleted")

    def delete_kb(self, kb: KnowledgeBase) -> None:
        uploads = [d.id for d in self.lb.store.list_documents(kb.id) if d.uploaded]
        self.lb.store.delete_kb(kb.id)
        for document_id in uploads:
            try:
                self.blobs.delete(document_id)
            except OSError:
                continue

    def _read_limited(self, chunks: Iterable[bytes]) -> bytes:
        limit = self.settings.max_upload_bytes
        parts: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise InvalidInput(f"the file is larger than the upload limit ({limit} bytes)")
            parts.append(chunk)
        return b"".join(parts)

    def _process_upload(self, kb_id: int, document_id: str) -> None:
        store = self.lb.store
        document = store.find_document(document_id)
        if document is None or document.kb_id != kb_id:
            return
        kb = store.get_kb_by_id(kb_id)
        display = self.display_name(document)
        file = SourceFile(
            path=Path(PurePath(display).name or document.path),
            key=document.path,
            data=lambda: self.blobs.get(document_id),
            display_name=document.display_name,
        )
        self.events.publish("document", kb_id, document_id=document_id, state="extracting")
        with self.lb.lock:
            self.lb.ingestor.process(kb, [file])
        final = store.find_document(document_id)
        if final is not None:
            self.events.publish("document", kb_id, document_id=document_id,
                                state=final.state.value, reason=final.reason)  # fmt: skip

    def _pending_uploads(self) -> Iterator[Job]:
        yield from self.lb.store.list_uploads(DocumentState.PENDING)

    def _upload_ids(self) -> set[str]:
        return {document_id for _, document_id in self.lb.store.list_uploads()}

    def _documents_by_state(self) -> dict[str, int]:
        counts = self.lb.store.count_documents_by_state()
        return {state.value: count for state, count in counts.items()}
