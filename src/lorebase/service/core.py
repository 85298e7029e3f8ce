"""The :class:`Lorebase` application service, assembled from one mixin per group of use cases.

Each group lives in a module of its own, each building on the one before: ``access`` (callers
and what they may see), ``bases``, ``documents`` (reads, search, agents, deletes, reindex),
``uploads``, ``passes`` (indexing folders, the background of ``serve``); :class:`Parts`
declares what they share. The composition root
(:mod:`lorebase.app`) builds the parts from :class:`~lorebase.settings.Settings` and hands them
in: this layer never picks a concrete store, embedder or reranker.

Threading: searches and reads run on any thread (the store gives each its own snapshot);
ingestion — folder passes, uploads, reindexes — runs under the ingestion lock, either on the
caller's thread (CLI, library) or on the ingestion queue's workers (``serve``); nothing else
starts a thread but the folder watcher of ``serve``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

from lorebase.accounts.base import AccountStore, Role, User
from lorebase.embed.base import Embedder
from lorebase.embed.registry import Embedders
from lorebase.events import EventBus
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.queue import IngestQueue, JobQueue, QueueFactory
from lorebase.ingest.sync import Syncer
from lorebase.lock import IngestLock
from lorebase.rerank.base import Reranker
from lorebase.search.service import SearchService
from lorebase.service.passes import Passes
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, Store
from lorebase.vault.keys import DataKey
from lorebase.vault.storage import BlobStorage

# The identity of HTTP requests when keys are off (loopback only): a local administrator.
LOCAL_USER = User(id=0, name="local", role=Role.ADMIN, created_at=0.0)


class Lorebase(Passes):
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
        self.ingestor = Ingestor(store, self.embedders, settings.extract, on_document=self._settled)
        self.syncer = Syncer(store, self.ingestor)
        self.searcher = SearchService(store, self.embedders, reranker, settings.search)
        self.lock = IngestLock(settings.data_dir, holder)
        self.events = events if events is not None else EventBus()
        self._announced_damage = set()
        self._damage_lock = threading.Lock()
        self.queue = (
            queue(self._run_job, self._pending_jobs, self.abandon_upload)
            if queue is not None
            else self._local_queue()
        )
        self._make_accounts = accounts
        self._accounts: AccountStore | None = None
        self._init_uploads(data_key, blob_storage)
        self._init_passes()

    def _local_queue(self) -> JobQueue:
        """The embedded default: this process's own queue (its state is in the store)."""
        return IngestQueue(
            self._run_job,
            self._pending_jobs,
            size=self.settings.serve.queue_size,
            workers=self.settings.serve.workers,
        )

    def _settled(self, kb_id: int, document: DocumentRecord) -> None:
        """A document indexed or failed, by any pass or upload: an event (ids and states)."""
        self.events.publish(
            "document",
            kb_id,
            document_id=document.id,
            state=document.state.value,
            reason=document.reason,
        )

    @property
    def store_location(self) -> str:
        """Where the knowledge bases live, for people: the SQLite file, or the PostgreSQL
        database's URL without its password."""
        return self.store.location

    @property
    def accounts(self) -> AccountStore:
        """Users, teams, API keys and the audit log (opened on first use)."""
        if self._accounts is None:
            if self._make_accounts is None:
                from lorebase.errors import Unavailable

                raise Unavailable("this lorebase was opened without accounts")
            self._accounts = self._make_accounts()
        return self._accounts

    # -- life ----------------------------------------------------------------------------------
    def close(self) -> None:
        self.stop_serving()
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
