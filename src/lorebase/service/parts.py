"""What the use-case mixins of :class:`~lorebase.service.core.Lorebase` share: declared once
here so each mixin is type-checked on its own."""

from __future__ import annotations

import threading

from lorebase.accounts.base import AccountStore
from lorebase.embed.base import Embedder
from lorebase.embed.registry import Embedders
from lorebase.events import EventBus
from lorebase.ingest.pipeline import Ingestor
from lorebase.ingest.queue import JobQueue
from lorebase.ingest.sync import Syncer
from lorebase.lock import IngestLock
from lorebase.rerank.base import Reranker
from lorebase.search.service import SearchService
from lorebase.settings import Settings
from lorebase.store.base import Store
from lorebase.vault.blobs import BlobStore


class Parts:
    settings: Settings
    store: Store
    embedder: Embedder | None
    embedders: Embedders
    reranker: Reranker | None
    ingestor: Ingestor
    syncer: Syncer
    searcher: SearchService
    lock: IngestLock
    events: EventBus
    queue: JobQueue
    _stop: threading.Event
    # The bases whose damaged keyword index a search event announced (see Documents).
    _announced_damage: set[int]
    _damage_lock: threading.Lock

    # Defined by Lorebase and Uploads; declared here so every mixin may use them.
    @property
    def accounts(self) -> AccountStore:
        raise NotImplementedError

    @property
    def blobs(self) -> BlobStore:
        raise NotImplementedError

    def upload_name(self, document_id: str) -> str | None:
        raise NotImplementedError
