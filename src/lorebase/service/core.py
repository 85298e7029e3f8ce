"""The :class:`Lorebase` application service: a facade over the use-case objects it is made of,
one module and one job each — :class:`~.access.Access` (callers, keys, sessions, the audit log,
every lookup as a caller may see it), :class:`~.originals.Originals` (the data key, the sealed
originals and names of uploads), :class:`~.bases.Bases` (bases and their sources),
:class:`~.documents.Documents` (reads, listings, search, deletes, reindex),
:class:`~.uploads.Uploads`, :class:`~.passes.Passes` (add, sync, watch, key rotation) and
:class:`~.serving.Serving` (the background of ``serve``). :meth:`Lorebase.__init__` makes them,
handing each exactly the parts it uses and the objects it asks (made before it: data flows one
way); every public method is a one-line delegate. The composition root (:mod:`lorebase.app`)
builds the parts from :class:`~lorebase.settings.Settings`: this layer never picks a concrete
store, embedder or reranker.

Threading: searches and reads run on any thread (the store gives each its own snapshot);
ingestion — folder passes, uploads, reindexes — runs under the ingestion lock, either on the
caller's thread (CLI, library) or on the ingestion queue's workers (``serve``); nothing else
starts a thread but the folder watcher of ``serve``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path, PurePath
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from lorebase.accounts.access import Caller
from lorebase.accounts.base import AccountStore, ApiKey, AuditEntry
from lorebase.embed.base import Embedder
from lorebase.embed.registry import Embedders, Reachability
from lorebase.events import EventBus
from lorebase.extract.page_image import PageImage
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.queue import IngestQueue, Job, JobQueue, QueueFactory
from lorebase.ingest.report import IngestReport, Progress
from lorebase.ingest.sync import Syncer
from lorebase.ingest.watch import DEFAULT_RESCAN_SECONDS
from lorebase.inspect import chunk_bytes
from lorebase.languages import LanguageDetector
from lorebase.lock import IngestLock
from lorebase.rerank.base import Reranker
from lorebase.search.query import SearchRequest, SearchResponse
from lorebase.search.service import SearchService
from lorebase.search.turns import SEARCHES_AT_ONCE
from lorebase.service.access import LOCAL_USER, Access
from lorebase.service.bases import DEFAULT_KB, Bases
from lorebase.service.documents import Documents
from lorebase.service.listing import DocumentListing, DocumentPage
from lorebase.service.maintenance import (
    BackupReport,
    CheckReport,
    Compaction,
    Maintaining,
    Reclaimable,
    RestoreReport,
    restore,
)
from lorebase.service.notes import Notes
from lorebase.service.originals import Originals
from lorebase.service.own_keys import OwnEmbedderKeys
from lorebase.service.pages import DEFAULT_PAGE_WIDTH, Pages
from lorebase.service.passes import Passes, announcing, pacing
from lorebase.service.portable import ExportSummary, ImportSummary, Portability
from lorebase.service.serving import Serving
from lorebase.service.sharing import SharedGrant, Sharing
from lorebase.service.stale import StaleDocuments
from lorebase.service.uploads import Uploads
from lorebase.service.usage import UsageReports
from lorebase.settings import ChunkSettings, Settings
from lorebase.store.base import (
    DocumentRecord,
    KnowledgeBase,
    NoteVersion,
    Source,
    Store,
    StoredChunk,
)
from lorebase.store.states import DocumentState, Scope
from lorebase.usage import UsageMeter, UsageRow
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import DataKey
from lorebase.vault.storage import BlobStorage

if TYPE_CHECKING:
    from lorebase.types import Chunk
    from lorebase.vault.rotation import Rotation

__all__ = ["LOCAL_USER", "Lorebase"]


class Lorebase:
    """A lorebase instance over one data directory. Use :func:`lorebase.open`.

    Methods that take a ``caller`` check what that user may see and change, and report a
    base or document they may not see exactly like a missing one. Without a caller (the
    library, the CLI: whoever runs the process owns the data directory) nothing is hidden.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        holder: str = "lorebase",
        reranker: Reranker | None = None,
        *,
        accounts: Callable[[], AccountStore] | None = None,
        data_key: DataKey | None = None,
        shared_clients: bool = False,
        queue: QueueFactory | None = None,
        events: EventBus | None = None,
        blob_storage: BlobStorage | None = None,
        embedders: Embedders | None = None,
    ) -> None:
        """``embedder``: the process's own (what bases that name no embedder use);
        ``embedders``: the named ones (default: those of ``settings``, around ``embedder``)."""
        self.settings = settings
        # Borrowed from another instance (an evaluation's own data directory): not closed here.
        self._shared_clients = shared_clients
        self.store = store
        self.embedders = (
            embedders
            if embedders is not None
            else Embedders(
                settings.embedders,
                settings.model_cache,
                default=embedder,
                default_name=settings.default_embedder,
            )
        )
        self.embedder = self.embedders.default
        self.reranker = reranker
        events = self.events = events if events is not None else EventBus()
        languages = LanguageDetector(settings.model_cache)  # one model a process, unpacked once
        meter = self.usage_meter = UsageMeter(store, time.time)
        self.ingestor = Ingestor(
            store,
            self.embedders,
            settings.extract,
            on_document=announcing(events),
            detector=languages,
            usage=meter,
        )
        self.syncer = Syncer(store, self.ingestor, on_pace=pacing(events))
        self.searcher = SearchService(
            store,
            self.embedders,
            reranker,
            settings.search,
            languages=languages,
            usage=meter,
            # In turns over the embedded store; over PostgreSQL a search waits on the database.
            at_once=SEARCHES_AT_ONCE if settings.store_url is None else None,
            cores_shared=settings.serve.processes >= (os.cpu_count() or 1),
        )
        lock = self.lock = IngestLock(settings.data_dir, holder)
        # The queue's callbacks are this facade's: the objects that do the jobs come below.
        self.queue: JobQueue = (
            queue(self._run_job, self._pending_jobs, self.abandon_upload)
            if queue is not None
            else IngestQueue(
                self._run_job,
                self._pending_jobs,
                size=settings.serve.queue_size,
                workers=settings.serve.workers,
            )
        )
        # The use-case objects, each made after the ones it asks.
        jobs = self.queue
        access = self._access = Access(settings, store, accounts)
        originals = self._originals = Originals(settings, store, data_key, blob_storage)
        self._pages = Pages(store, originals)
        bases = self._bases = Bases(settings, store, self.embedders, events, access, originals)
        self._documents = Documents(
            store, self.embedders, self.searcher, events, jobs, access, originals
        )
        uploads = self._uploads = Uploads(
            settings, store, self.embedders, self.ingestor, lock, events, jobs, access, originals
        )
        self._notes = Notes(settings, store, events, access, originals, uploads)
        self._sharing = Sharing(store, access)
        self._usage = UsageReports(store, meter)
        self._own_keys = OwnEmbedderKeys(settings, access, originals, self.embedders)
        if accounts is not None:
            self.embedders.use_owner_keys(self._own_keys.resolve)
        passes = self._passes = Passes(
            settings, store, self.syncer, lock, access, bases, uploads, originals
        )
        stale = self._stale = StaleDocuments(settings, store, self.ingestor, lock, uploads)
        self._maintaining = Maintaining(settings, store, lock, originals)
        self._portability = Portability(settings, store, self.embedders, access, originals, events)
        self._serving = Serving(
            settings,
            store,
            events,
            jobs,
            lock,
            originals,
            uploads,
            passes,
            self._queued_pass,
            stale=stale,
            usage=meter,
        )

    @property
    def store_location(self) -> str:
        """Where the knowledge bases live, for people: the SQLite file, or the PostgreSQL
        database's URL without its password."""
        return self.store.location

    # -- callers and what they may see (Access) ------------------------------------------------
    @property
    def accounts(self) -> AccountStore:
        """Users, teams, API keys and the audit log (opened on first use)."""
        return self._access.accounts

    def authenticate(self, key: str | None, session: str | None = None) -> Caller:
        """The caller behind an API key, else a sign-in session."""
        return self._access.authenticate(key, session)

    def sign_in(self, key: str, client: str | None = None) -> tuple[Caller, str, float]:
        """Exchange a valid API key for a session: (its caller, the token, its expiry)."""
        return self._access.sign_in(key, client)

    def sign_out(self, session: str) -> None:
        """End a session (unknown or ended ones are ignored)."""
        self._access.sign_out(session)

    def own_keys(self, caller: Caller) -> list[ApiKey]:
        """The caller's own API keys (records, never the keys)."""
        return self._access.own_keys(caller)

    def create_own_key(
        self, caller: Caller, name: str, expires_at: float | None = None, key: str | None = None
    ) -> tuple[str, ApiKey]:
        """A new key for the caller, made with (and revoked with) the key it asks with."""
        return self._access.create_own_key(caller, name, expires_at, key)

    def revoke_own_key(self, caller: Caller, key_id: int) -> None:
        """Revoke one of the caller's keys; its sessions end with it."""
        self._access.revoke_own_key(caller, key_id)

    def audit_log(
        self, caller: Caller | None = None, *, since: float | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The newest audited changes — who, when, what (ids), from where — for
        administrators."""
        return self._access.audit_log(caller, since, limit)

    def team_names(self) -> dict[int, str]:
        """Every team's name by id."""
        return self._access.team_names()

    def knowledge_bases(
        self, caller: Caller | None = None, *, totals: bool = True
    ) -> list[KnowledgeBase]:
        """The bases the caller may see (every base without a caller)."""
        return self._access.knowledge_bases(caller, totals=totals)

    def kb(
        self,
        name: str,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = True,
        administer: bool = False,
    ) -> KnowledgeBase:
        """A base by name (or, when no base answers to it, a number as an id)."""
        return self._access.kb(name, caller, write=write, totals=totals, administer=administer)

    def kb_by_id(
        self,
        kb_id: int,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = False,
        administer: bool = False,
    ) -> KnowledgeBase:
        """A base by id, as the caller may see (and with ``write``, change its documents;
        with ``administer``, administer) it."""
        return self._access.kb_by_id(
            kb_id, caller, write=write, totals=totals, administer=administer
        )

    def document(
        self, document_id: str, caller: Caller | None = None, *, write: bool = False
    ) -> tuple[KnowledgeBase, DocumentRecord]:
        """A document by id in any base the caller may see, with its base."""
        return self._access.document(document_id, caller, write=write)

    def may_see(self, key: str | None, kb_id: int, session: str | None = None) -> bool:
        """Whether the holder of ``key`` (or ``session``) may see base ``kb_id`` now."""
        return self._access.may_see(key, kb_id, session)

    # -- knowledge bases and their sources (Bases) ---------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope | str = Scope.PERSONAL,
        chunk_settings: ChunkSettings | None = None,
        sources: Sequence[Path] = (),
        team: str | None = None,
        caller: Caller | None = None,
        embedder: str | None = None,
    ) -> KnowledgeBase:
        """A new base owned by the caller, following ``sources``, embedded with ``embedder``."""
        return self._bases.create_kb(
            name,
            description=description,
            scope=scope,
            chunk_settings=chunk_settings,
            sources=sources,
            team=team,
            caller=caller,
            embedder=embedder,
        )

    def ensure_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base called ``name``, created with default settings if needed."""
        return self._bases.ensure_kb(name)

    def update_kb(
        self,
        kb: KnowledgeBase | str,
        chunk_settings: ChunkSettings | None = None,
        *,
        description: str | None = None,
        caller: Caller | None = None,
    ) -> KnowledgeBase:
        """New chunking settings and/or a new description."""
        return self._bases.update_kb(kb, chunk_settings, description=description, caller=caller)

    def reembed_kb(
        self, kb: KnowledgeBase | str, embedder: str, *, caller: Caller | None = None
    ) -> KnowledgeBase:
        """Move the base to the named ``embedder`` (its next passes make the new vectors)."""
        return self._bases.reembed_kb(kb, embedder, caller=caller)

    def embedder_reachability(self, kb: KnowledgeBase) -> Reachability:
        """Whether the embedder the base answers with does."""
        return self._bases.embedder_reachability(kb)

    def delete_kb(self, kb: KnowledgeBase | str, *, caller: Caller | None = None) -> None:
        """The base and everything in it."""
        self._bases.delete_kb(kb, caller=caller)

    def sources(self, kb: KnowledgeBase | str) -> list[Source]:
        """The folders and files the base follows."""
        return self._bases.sources(kb)

    def add_source(
        self, kb: KnowledgeBase | str, path: Path | str, *, caller: Caller | None = None
    ) -> Source:
        """Follow a folder (on this machine: over HTTP, administrators only)."""
        return self._bases.add_source(kb, path, caller=caller)

    def remove_source(
        self, kb: KnowledgeBase | str, source: int | str, *, caller: Caller | None = None
    ) -> int:
        """Stop following a folder or file; returns how many documents were dropped."""
        return self._bases.remove_source(kb, source, caller=caller)

    # -- documents: reads, search, changes (Documents) -----------------------------------------
    def documents(
        self, kb: KnowledgeBase | str, state: DocumentState | None = None
    ) -> list[DocumentRecord]:
        """The base's documents (those in ``state``)."""
        return self._documents.documents(kb, state)

    def document_page(self, kb: KnowledgeBase | str, listing: DocumentListing) -> DocumentPage:
        """The page of the base's documents ``listing`` asks for."""
        return self._documents.document_page(kb, listing)

    def document_in(self, kb: KnowledgeBase | str, document_id: str) -> DocumentRecord:
        """A document of this base by id (``NotFound`` for an id of another base)."""
        return self._documents.document_in(kb, document_id)

    def find_document(self, id_or_prefix: str) -> tuple[KnowledgeBase, DocumentRecord]:
        """The operator's lookup (CLI): a document by id, or by the start of its id."""
        return self._documents.find_document(id_or_prefix)

    def fields_of(self, kb: KnowledgeBase, document: DocumentRecord) -> dict[str, list[str]]:
        """What is known of a document — tags, author, dates, any key of its front matter or
        properties — by field (see :mod:`lorebase.fields`)."""
        return self._documents.fields_of(kb, document)

    def user_tags(self, kb: KnowledgeBase, document: DocumentRecord) -> list[str]:
        """The tags people set on a document (``fields_of`` merges them with its file's)."""
        return self._documents.user_tags(kb, document)

    def field_names(self, kbs: Sequence[KnowledgeBase]) -> list[str]:
        """The fields some document of these bases has."""
        return self._documents.field_names(kbs)

    def tag_document(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        *,
        add: Sequence[str] = (),
        remove: Sequence[str] = (),
        caller: Caller | None = None,
    ) -> list[str]:
        """Set and remove tags on a document (find it with ``document(id, caller,
        write=True)`` first); the tags people set on it now."""
        return self._documents.tag(kb, document, add, remove, caller=caller)

    def source_of(self, kb: KnowledgeBase, document: DocumentRecord) -> Source | None:
        """The folder or file a document comes from; None for an upload."""
        return self._documents.source_of(kb, document)

    def page_image(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        page: int,
        *,
        chunk_id: str | None = None,
        width: int = DEFAULT_PAGE_WIDTH,
    ) -> PageImage:
        """Page ``page`` (1-based) of a PDF document as a PNG ``width`` pixels wide, with the
        passage ``chunk_id`` (one of its chunks) marked where it stands (find the document
        with ``document(id, caller)`` first: the access check is that one)."""
        origin = self._documents.origin(kb, document)
        return self._pages.page(kb, document, origin, page, chunk_id=chunk_id, width=width)

    def rechunk_preview(
        self, kb: KnowledgeBase, document: DocumentRecord, settings: ChunkSettings
    ) -> list[Chunk]:
        """The chunks ``document`` would have with other chunk settings, read again from its
        file or original and chunked, nothing stored: what to look at before changing the
        base's settings (``update_kb``), which re-chunks every document."""
        data = self._pages.original(document, self._documents.origin(kb, document))
        name = PurePath(self.display_name(document)).name or PurePath(document.path).name
        return chunk_bytes(data, PurePath(name), self.settings.extract, settings)

    def origin(self, kb: KnowledgeBase, document: DocumentRecord) -> Path | None:
        """Where a document's file is on this machine (None: see :meth:`source_of`)."""
        return self._documents.origin(kb, document)

    def display_name(self, document: DocumentRecord) -> str:
        """What to show for a document: an upload's (decrypted) file name, else its path."""
        return self._originals.display_name(document)

    def text(self, kb: KnowledgeBase | str, document_id: str) -> str:
        """The whole extracted text of a document (chunk offsets index into it)."""
        return self._documents.text(kb, document_id)

    def read(
        self, kb: KnowledgeBase | str, document_id: str, start: int = 0, max_chars: int = 20_000
    ) -> str:
        """A bounded window of a document's extracted text."""
        return self._documents.read(kb, document_id, start, max_chars)

    def neighbors(
        self, kb: KnowledgeBase | str, chunk_id: str, window: int = 1
    ) -> list[StoredChunk]:
        """The chunk and up to ``window`` chunks each side of it in its document, in order."""
        return self._documents.neighbors(kb, chunk_id, window)

    def chunks_of(
        self, kb: KnowledgeBase | str, document_id: str, start: int = 0, limit: int = 20
    ) -> list[StoredChunk]:
        """A document's chunks in order from ordinal ``start``."""
        return self._documents.chunks_of(kb, document_id, start, limit)

    def search(
        self,
        request: SearchRequest | str,
        *,
        kb: str | int | KnowledgeBase | Sequence[str | int | KnowledgeBase] | None = None,
        caller: Caller | None = None,
        **options: Any,
    ) -> SearchResponse:
        """Hybrid (or one-arm) search over the given bases (none: every base the caller may
        see): ``lb.search("vacation policy", kb="notes", top_k=5, mode="keyword")``, or a
        :class:`~lorebase.search.query.SearchRequest`."""
        return self._documents.search(request, kb=kb, caller=caller, **options)

    def observe_embedding(self, observer: Callable[[str, float], None]) -> None:
        """Call ``observer(kind, seconds)`` after each batch the embedder answers (metrics)."""
        self._documents.observe_embedding(observer)

    def damaged_keyword_indexes(self, kb_ids: Sequence[int] | None = None) -> dict[int, str]:
        """The bases whose keyword index this process found damaged, with why."""
        return self._documents.damaged_keyword_indexes(kb_ids)

    def documents_by_state(self) -> dict[str, int]:
        """How many documents are in each state, over every base (metrics)."""
        return self._documents.documents_by_state()

    def stale_documents(self, kb_ids: Sequence[int] | None = None) -> dict[int, int]:
        """How many documents an older version made each base holds (read again by the next
        sync, or by the server in the background); a base without any is left out."""
        return self._stale.count(kb_ids)

    def seconds_left(self) -> dict[int, float]:
        """The time left of each pass running now, by base (one still measuring its rate is
        left out)."""
        return self._passes.seconds_left()

    def delete_document(
        self, kb: KnowledgeBase, document: DocumentRecord, *, caller: Caller | None = None
    ) -> None:
        """The document's rows, then its stored original."""
        self._documents.delete_document(kb, document, caller=caller)

    def reindex(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord | None = None,
        *,
        caller: Caller | None = None,
    ) -> int:
        """Index one document, or every document of the base, again in the background."""
        return self._documents.reindex(kb, document, caller=caller)

    def request_pass(self, kb: KnowledgeBase) -> None:
        """A pass over the base's folders, in the background."""
        self._documents.request_pass(kb)

    # -- uploads and their sealed originals (Uploads, Originals) -------------------------------
    @property
    def data_key(self) -> DataKey:
        """The key that seals uploads and their names."""
        return self._originals.data_key

    @property
    def blobs(self) -> BlobStore:
        """The encrypted originals of uploaded files."""
        return self._originals.blobs

    def upload_name(self, document_id: str) -> str | None:
        """An uploaded document's own file name, by id (None: no such upload)."""
        return self._originals.upload_name(document_id)

    @staticmethod
    def upload_kind(filename: str) -> tuple[str, str]:
        """An upload's own name and its kind (checks nothing else)."""
        return Uploads.upload_kind(filename)

    def upload(
        self,
        kb: KnowledgeBase,
        filename: str,
        chunks: Iterable[bytes],
        *,
        caller: Caller | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Store one uploaded file encrypted and queue it: (document, created)."""
        return self._uploads.upload(kb, filename, chunks, caller=caller)

    def abandon_upload(self, kb_id: int, document_id: str) -> None:
        """Fail an upload whose job was cut off too often (``worker_lost``)."""
        self._uploads.abandon_upload(kb_id, document_id)

    # -- users' own keys for HTTP embedders (OwnEmbedderKeys) -------------------------------
    def set_embedder_key(self, caller: Caller, embedder: str, key: str) -> None:
        """Keep ``key`` (sealed) as the caller's own for an HTTP embedder: their personal
        bases are embedded and searched with it from now on."""
        self._own_keys.set(caller, embedder, key)

    def remove_embedder_key(self, caller: Caller, embedder: str) -> None:
        """Forget the caller's own key for an embedder."""
        self._own_keys.remove(caller, embedder)

    def embedder_keys(self, caller: Caller) -> list[tuple[str, float]]:
        """The embedders the caller keeps a key for, with when it was set (never the keys)."""
        return self._own_keys.listed(caller)

    # -- what model calls cost (UsageReports) -----------------------------------------------
    def usage(self, caller: Caller | None = None, *, since: float | None = None) -> list[UsageRow]:
        """Model calls counted since ``since`` per base, user, model and role: everyone's
        for an administrator, the caller's own otherwise."""
        return self._usage.usage(caller, since)

    # -- bases shared with another team or a user (Sharing) ----------------------------------
    def share_kb(
        self,
        kb: KnowledgeBase,
        *,
        team: str | None = None,
        user: str | None = None,
        write: bool = False,
        caller: Caller | None = None,
    ) -> SharedGrant:
        """Share a team base (looked up with ``administer=True``) with a team or a user."""
        return self._sharing.share(kb, team=team, user=user, write=write, caller=caller)

    def unshare_kb(
        self,
        kb: KnowledgeBase,
        *,
        grant_id: int | None = None,
        team: str | None = None,
        user: str | None = None,
        caller: Caller | None = None,
    ) -> SharedGrant:
        """End a grant of the base, at once."""
        return self._sharing.unshare(kb, grant_id=grant_id, team=team, user=user, caller=caller)

    def grants(self, kb: KnowledgeBase) -> list[SharedGrant]:
        """Whom the base is shared with."""
        return self._sharing.grants(kb)

    # -- notes a user writes into a base (Notes) -----------------------------------------------
    def add_note(
        self,
        kb: KnowledgeBase,
        text: str,
        title: str | None = None,
        *,
        caller: Caller | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Write a note into ``kb`` (looked up with ``write=True``), searchable when this
        returns: (its document, created)."""
        return self._notes.add(kb, text, title, caller=caller)

    def edit_note(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        text: str | None = None,
        title: str | None = None,
        *,
        caller: Caller | None = None,
    ) -> DocumentRecord:
        """Replace a note's text and/or title; the replaced ones become its next version."""
        return self._notes.edit(kb, document, text, title, caller=caller)

    def notes(self, kb: KnowledgeBase) -> list[DocumentRecord]:
        """The base's notes."""
        return self._notes.notes(kb)

    def note_content(self, document: DocumentRecord) -> tuple[str, str]:
        """A note's (title, text) as it stands."""
        return self._notes.content(document)

    def note_versions(self, kb: KnowledgeBase, document: DocumentRecord) -> list[NoteVersion]:
        """The earlier versions of a note, oldest first."""
        return self._notes.versions(kb, document)

    # -- indexing: folder passes (Passes) ------------------------------------------------------
    def ingesting(self) -> AbstractContextManager[None]:
        """Hold the ingestion lock (puts back what a crashed pass left half way)."""
        return self._passes.ingesting()

    def add(
        self,
        paths: Sequence[Path],
        kb: str = DEFAULT_KB,
        on_progress: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
        defer_larger_than: int | None = None,
    ) -> IngestReport:
        """Index files and folders into ``kb`` (created if needed), each followed from now."""
        return self._passes.add(paths, kb, on_progress, stop, defer_larger_than)

    def sync(
        self,
        kb: KnowledgeBase | str | None = None,
        *,
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> dict[str, IngestReport]:
        """One pass over the folders and files of ``kb`` (default: every base following some)."""
        return self._passes.sync(kb, full=full, stop=stop, on_progress=on_progress)

    def watch(
        self,
        kb: str | None = None,
        *,
        stop: threading.Event,
        rescan_seconds: float = DEFAULT_RESCAN_SECONDS,
        on_report: Callable[[KnowledgeBase, IngestReport], None] | None = None,
    ) -> None:
        """Keep the folders of ``kb`` (default all) indexed until ``stop`` is set."""
        self._passes.watch(kb, stop=stop, rescan_seconds=rescan_seconds, on_report=on_report)

    def rotate_data_key(self) -> Rotation:
        """Re-encrypt every upload and sealed name under a new data key (re-runnable)."""
        return self._passes.rotate_data_key()

    # -- one base to a portable file and back (Portability) ------------------------------------
    def export_kb(
        self,
        kb: KnowledgeBase | str,
        target: Path,
        *,
        key: str | None = None,
        originals: bool = True,
        caller: Caller | None = None,
    ) -> ExportSummary:
        """Write the base to one portable file (originals sealed under ``key``, or left out)."""
        return self._portability.export_kb(kb, target, key=key, originals=originals, caller=caller)

    def import_kb(
        self,
        source: Path | IO[bytes],
        *,
        name: str | None = None,
        replace: bool = False,
        reembed: bool = False,
        key: str | None = None,
        caller: Caller | None = None,
    ) -> ImportSummary:
        """Read an export into a new base, checked first, all or nothing."""
        return self._portability.import_kb(
            source, name=name, replace=replace, reembed=reembed, key=key, caller=caller
        )

    # -- the background of `serve` (Serving) ---------------------------------------------------
    def start_serving(self) -> None:
        """Start the queue's workers and the folder watcher (``serve``, ``lorebase worker``)."""
        self._serving.start()

    def stop_serving(self) -> None:
        """Workers finish the job they hold; the watcher ends; the lock is released."""
        self._serving.stop()

    def _run_job(self, kb_id: int, document_id: str | None) -> None:
        """The queue's runner: one upload, or a pass over one base's folders."""
        self._serving.run_job(kb_id, document_id)

    def _pending_jobs(self) -> Iterator[Job]:
        """What the queue's sweep finds to do."""
        return self._serving.pending_jobs()

    def _queued_pass(self, kb: KnowledgeBase, stop: threading.Event) -> None:
        """A pass the queue runs: a :meth:`sync` like any other, through this facade."""
        self.sync(kb, stop=stop)

    # -- keeping the store sound and small, backups (Maintaining) -----------------------------
    def check(self, kb_ids: Sequence[int] | None = None, *, repair: bool = False) -> CheckReport:
        """Verify the database, the bases' indexes and the uploads' originals; with
        ``repair``, rebuild the derived indexes found wanting (under the ingestion lock)."""
        return self._maintaining.check(kb_ids, repair=repair)

    def reclaimable(self) -> Reclaimable:
        """The space deletes left behind that :meth:`vacuum` gives back."""
        return self._maintaining.reclaimable()

    def vacuum(self) -> Compaction:
        """Give back what deletes left behind (under the ingestion lock)."""
        return self._maintaining.vacuum()

    def backup(self, folder: Path, *, key: bool = True) -> BackupReport:
        """A consistent copy of the data directory into an empty folder, while serving."""
        return self._maintaining.backup(folder, key=key)

    @staticmethod
    def restore(backup: Path, settings: Settings, *, replace: bool = False) -> RestoreReport:
        """Put a backup back as the data directory of ``settings`` (verified first; never
        under a running server)."""
        return restore(backup, settings, replace=replace)

    # -- life ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background, then close the parts (borrowed clients are left open)."""
        self.stop_serving()
        with contextlib.suppress(Exception):  # what cannot be written now is lost, not fatal
            self.usage_meter.flush()
        self.events.close()
        self.searcher.close()
        self.ingestor.close()
        self.store.close()
        if not self._shared_clients:
            self.embedders.close()
        for client in () if self._shared_clients else (self.embedder, self.reranker):
            # HTTP ones hold pooled connections
            closing = getattr(client, "close", None)
            if callable(closing):
                closing()

    def __enter__(self) -> Lorebase:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
