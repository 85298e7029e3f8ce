"""The composition root: the one place that knows the concrete classes. It builds the store,
the accounts, the embedder and the reranker from :class:`~lorebase.settings.Settings` and hands
them to :class:`~lorebase.service.Lorebase`, the application service every surface (library,
CLI, HTTP, MCP) calls, which wires its own use-case objects from those parts.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lorebase.accounts.base import AccountStore
from lorebase.embed.base import Embedder
from lorebase.embed.registry import Embedders, build_named, bundled_model
from lorebase.errors import NotFound
from lorebase.events import EventBus
from lorebase.http_json import CONNECT_TIMEOUT
from lorebase.ingest.queue import Abandon, Job, JobQueue, QueueFactory, Runner
from lorebase.private import narrow, private_file, private_folder
from lorebase.rerank.base import Reranker
from lorebase.service import Lorebase
from lorebase.service.bases import DEFAULT_KB
from lorebase.settings import EmbedSettings, RerankSettings, Settings, SiblingPlace
from lorebase.settings.embedders import BUNDLED, EmbedderConfig
from lorebase.store.base import Store
from lorebase.vault.keys import DataKey
from lorebase.vault.storage import BlobStorage

__all__ = ["DEFAULT_KB", "Lorebase", "build_embedder", "build_reranker", "open_lorebase"]


def build_embedder(
    settings: EmbedSettings, cache_dir: Path, *, lowered: bool = False, queries: bool = True
) -> Embedder | None:
    """The configured embedder, imported lazily (the ONNX runtime loads only when used;
    ``lowered`` and ``queries`` as :func:`~lorebase.embed.registry.bundled_model` takes them)."""
    if settings.kind == "none":
        return None
    if settings.kind == "fake":
        from lorebase.embed.fake import FakeEmbedder

        return FakeEmbedder()
    if settings.kind == "http":
        from lorebase.embed.http import HttpEmbedder

        assert settings.url and settings.model  # checked by EmbedSettings
        return HttpEmbedder(
            settings.url, settings.model, api_key=settings.api_key, read_timeout=settings.timeout
        )
    return bundled_model(cache_dir, quantize=settings.quantize, lowered=lowered, queries=queries)


def build_reranker(settings: RerankSettings, deadline: float | None = None) -> Reranker | None:
    """The configured reranker, if any (imported lazily). ``deadline``: the seconds a search
    waits for it; an HTTP reranker gives up no later (an answer after it is dropped anyway),
    so a stuck server does not keep a worker thread for its whole read timeout."""
    if settings.kind == "none":
        return None
    if settings.kind == "fake":
        from lorebase.rerank.fake import FakeReranker

        return FakeReranker()
    from lorebase.rerank.http import HttpReranker

    assert settings.url and settings.model  # checked by RerankSettings
    # A search waits on it: one retry after at most a second, then the fused order (with a
    # warning) rather than a long backoff or a server's Retry-After.
    timeout = settings.timeout if deadline is None else min(settings.timeout, deadline)
    return HttpReranker(
        settings.url,
        settings.model,
        api_key=settings.api_key,
        read_timeout=timeout,
        connect_timeout=min(CONNECT_TIMEOUT, timeout),
        max_retries=1,
        max_retry_after=1.0,
        max_backoff=1.0,
    )


def private_data_dir(data_dir: Path, database: Path) -> None:
    """The data directory (made ``0700``) and the database with its WAL files (``0600``;
    SQLite gives the WAL files the database's mode): they hold plaintext chunks, key hashes
    and the audit log. Files made by an older version are narrowed too."""
    if not data_dir.exists():
        private_folder(data_dir)
    private_file(database)
    for suffix in ("-wal", "-shm"):
        narrow(database.with_name(database.name + suffix))


@dataclass(frozen=True)
class Backend:
    """What a lorebase is kept in: the store, how to open the accounts beside it (on first use:
    most commands never need them), and — for a store many processes share — where uploaded
    originals go, how events travel between processes and the shared jobs table. None: the
    embedded defaults (files in the data directory, in-process events and queue)."""

    store: Store
    accounts: Callable[[], AccountStore]
    blob_storage: BlobStorage | None = None
    events: EventBus | None = None
    queue: QueueFactory | None = None


def build_backend(settings: Settings, *, create: bool = True) -> Backend:
    """The backend the settings name: the SQLite file of the data directory, or the
    PostgreSQL database of ``settings.store_url``. ``create=False``: an existing SQLite store
    only (``NotFound`` naming the data directory otherwise; nothing is created)."""
    if settings.store_url is not None:
        return _postgres_backend(settings, settings.store_url)
    from lorebase.store.sqlite.store import SqliteStore

    if not create and not settings.database.is_file():
        raise NotFound(f"there is no lorebase in {settings.data_dir} yet")
    private_data_dir(settings.data_dir, settings.database)
    place = settings.serve.sibling
    # Beside a server's indexer, the process that writes the chunks follows them.
    follow = place is None or place.runs_jobs
    store = SqliteStore(settings.database, lexical=settings.lexical, follow_writes=follow)

    def accounts() -> AccountStore:
        from lorebase.accounts.sqlite import SqliteAccounts

        return SqliteAccounts(store, audit_rows=settings.audit_rows)

    if place is None:
        return Backend(store, accounts)
    try:
        events, queue = _sibling_parts(settings, place)
    except BaseException:
        store.close()
        raise
    return Backend(store, accounts, events=events, queue=queue)


def _sibling_parts(settings: Settings, place: SiblingPlace) -> tuple[EventBus, QueueFactory]:
    """One of a server's processes over the embedded store: events shared with the others;
    the indexer runs every job, the others hand theirs to it."""
    from lorebase.ingest.queue import IngestQueue
    from lorebase.siblings import ForwardingQueue, SiblingChannel, SiblingTransport

    channel = SiblingChannel(place)
    serve = settings.serve

    def queue(run: Runner, pending: Callable[[], Iterable[Job]], abandon: Abandon) -> JobQueue:
        if not place.runs_jobs:
            return ForwardingQueue(channel, place.indexer)
        jobs = IngestQueue(run, pending, size=serve.queue_size, workers=serve.workers)
        channel.on_admit = jobs.admit
        return jobs

    return EventBus(transport=SiblingTransport(channel)), queue


def _postgres_backend(settings: Settings, url: str) -> Backend:
    """Every part over one pool of connections to the database."""
    from lorebase.events.postgres import PostgresTransport
    from lorebase.ingest.jobs_postgres import PostgresJobQueue
    from lorebase.store.postgres.database import PostgresDatabase
    from lorebase.store.postgres.store import PostgresStore
    from lorebase.vault.postgres_storage import PostgresBlobStorage

    database = PostgresDatabase(url, schema=settings.store_schema)
    try:
        store = PostgresStore(database, owns_database=True)
        blob_storage = PostgresBlobStorage(database)
        # An evaluation's index (a schema of its own) announces nothing to the service's
        # clients: its base ids mean other bases there.
        events = (
            EventBus(transport=PostgresTransport(url)) if settings.store_schema is None else None
        )
    except BaseException:
        database.close()
        raise
    serve = settings.serve

    def accounts() -> AccountStore:
        from lorebase.accounts.postgres import PostgresAccounts

        return PostgresAccounts(database, audit_rows=settings.audit_rows)

    def queue(run: Runner, pending: Callable[[], Iterable[Job]], abandon: Abandon) -> JobQueue:
        return PostgresJobQueue(
            database,
            run,
            pending,
            abandon=abandon,
            size=serve.queue_size,
            workers=serve.workers,
            lease_seconds=serve.lease_seconds,
        )

    return Backend(store, accounts, blob_storage, events, queue)


def open_lorebase(
    data_dir: Path | str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | Literal["configured"] | None = "configured",
    reranker: Reranker | Literal["configured"] | None = "configured",
    holder: str = "lorebase",
    data_key: DataKey | None = None,
    create: bool = True,
) -> Lorebase:
    """Open (creating if needed) the lorebase in ``data_dir`` (default: ``LOREBASE_HOME`` or
    the per-user data directory). ``embedder`` overrides the configured one (``None`` for
    keyword only), ``reranker`` likewise (``None``: searches asking to rerank keep the fused
    order). ``holder`` names this process in the ingestion lock's message; ``data_key``
    overrides the configured data key (tests). ``create=False`` opens an existing lorebase
    only, for what just reads."""
    if settings is None:
        settings = Settings.from_env(Path(data_dir) if data_dir is not None else None)
    backend = build_backend(settings, create=create)
    embedders = build_embedders(settings, embedder)
    reorder = (
        build_reranker(settings.rerank, settings.search.rerank_deadline)
        if isinstance(reranker, str)
        else reranker
    )
    return Lorebase(
        settings,
        backend.store,
        embedders.default,
        holder,
        reorder,
        accounts=backend.accounts,
        data_key=data_key,
        queue=backend.queue,
        events=backend.events,
        blob_storage=backend.blob_storage,
        embedders=embedders,
    )


def build_embedders(
    settings: Settings, embedder: Embedder | Literal["configured"] | None = "configured"
) -> Embedders:
    """The named embedders of ``settings`` and the process's own: ``embedder`` when given
    (None: keyword only), else the configured one (``LOREBASE_EMBEDDER``). The bundled model,
    when it is the process's, is one instance under both names, and new bases are made with
    it by name unless ``settings.default_embedder`` names another."""
    configs = list(settings.embedders)
    if not any(config.name == BUNDLED for config in configs):
        configs.append(EmbedderConfig(BUNDLED, kind="bundled", quantize=settings.embed.quantize))
    bundled = isinstance(embedder, str) and settings.embed.kind == "onnx"
    default_name = settings.default_embedder or (BUNDLED if bundled else None)
    embedders = Embedders(
        configs,
        settings.model_cache,
        default_name=default_name,
        query_seconds=settings.search.embed_deadline,
        build=functools.partial(
            build_named, lowered=settings.yield_to_requests, queries=settings.answers_queries
        ),
    )
    if bundled:
        embedders.default = embedders.get(BUNDLED)
    elif isinstance(embedder, str):
        embed = settings.embed
        embedders.default = build_embedder(
            embed,
            settings.model_cache,
            lowered=settings.yield_to_requests,
            queries=settings.answers_queries,
        )
        if embed.kind == "http":
            embedders.default_config = EmbedderConfig(
                "process", url=embed.url, model=embed.model, api_key=embed.api_key
            )
    else:
        embedders.default = embedder
    return embedders


def open_beside(lb: Lorebase, data_dir: Path, holder: str = "lorebase eval") -> Lorebase:
    """Another lorebase in ``data_dir`` with the settings, embedder and reranker of ``lb``
    (borrowed: closing it leaves them to ``lb``) — how an evaluation keeps an index of its
    own that no other surface sees."""
    schema = f"eval_{re.sub(r'[^a-z0-9_]', '_', data_dir.name.lower())}"[:63]
    settings = dataclasses.replace(
        lb.settings,
        data_dir=data_dir,
        store_schema=schema if lb.settings.shared_store else None,
        serve=dataclasses.replace(lb.settings.serve, sibling=None),
    )
    backend = build_backend(settings)
    return Lorebase(
        settings,
        backend.store,
        lb.embedder,
        holder,
        lb.reranker,
        embedders=lb.embedders,
        accounts=backend.accounts,
        shared_clients=True,
        queue=backend.queue,
        events=backend.events,
        blob_storage=backend.blob_storage,
    )
