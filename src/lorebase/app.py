"""The composition root: builds the store, embedder, ingestion and search from settings.

Everything else is handed what it needs; the CLI, library and (later) HTTP and MCP surfaces
are thin shells over :class:`Lorebase`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from lorebase.embed.base import Embedder
from lorebase.errors import InvalidInput, NotFound, Unavailable
from lorebase.ingest.pipeline import Ingestor, IngestReport, Progress, SourceFile
from lorebase.ingest.sync import Syncer
from lorebase.ingest.watch import DEFAULT_RESCAN_SECONDS, watch
from lorebase.lock import IngestLock
from lorebase.rerank.base import Reranker
from lorebase.search.service import SearchService
from lorebase.search.types import Mode, SearchRequest, SearchResponse
from lorebase.settings import ChunkSettings, EmbedSettings, RerankSettings, Settings
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KnowledgeBase,
    Scope,
    Source,
    Store,
)

DEFAULT_KB = "default"


def build_embedder(settings: EmbedSettings, cache_dir: Path) -> Embedder | None:
    """The configured embedder, imported lazily (the ONNX runtime loads only when used)."""
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
    try:
        from lorebase.embed.onnx import OnnxEmbedder
    except ImportError as error:  # onnxruntime or tokenizers missing
        raise Unavailable(
            "the local embedding runtime is not installed; run "
            "`pip install onnxruntime tokenizers` (or reinstall lorebase)"
        ) from error
    return OnnxEmbedder(cache_dir, quantize=settings.quantize)


def build_reranker(settings: RerankSettings) -> Reranker | None:
    """The configured reranker, if any (imported lazily)."""
    if settings.kind == "none":
        return None
    if settings.kind == "fake":
        from lorebase.rerank.fake import FakeReranker

        return FakeReranker()
    from lorebase.rerank.http import HttpReranker

    assert settings.url and settings.model  # checked by RerankSettings
    # A search waits on it: one retry after at most a second, then the fused order (with a
    # warning) rather than a long backoff or a server's Retry-After.
    return HttpReranker(settings.url, settings.model, api_key=settings.api_key,
                        read_timeout=settings.timeout, max_retries=1,
                        max_retry_after=1.0, max_backoff=1.0)  # fmt: skip


def _folder(path: Path) -> Path:
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise InvalidInput(f"{path} is not a folder; a source must be a folder")
    return folder


def build_store(settings: Settings) -> Store:
    from lorebase.store.sqlite.store import SqliteStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteStore(settings.database)


class Lorebase:
    """A lorebase instance over one data directory. Use :func:`lorebase.open`."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        holder: str = "lorebase",
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        self.ingestor = Ingestor(store, embedder, settings.extract)
        self.syncer = Syncer(store, self.ingestor)
        self.searcher = SearchService(store, embedder, reranker)
        self.lock = IngestLock(settings.data_dir, holder)

    @contextmanager
    def ingesting(self) -> Iterator[None]:
        """Hold the ingestion lock. On first taking it, documents a crashed pass left half
        way go back to ``pending`` (holding the lock proves no other pass is running)."""
        first = not self.lock.held
        self.lock.acquire()
        try:
            if first:
                self.store.reset_unfinished()
            yield
        finally:
            self.lock.release()

    # -- knowledge bases ---------------------------------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        chunk_settings: ChunkSettings | None = None,
        sources: Sequence[Path] = (),
    ) -> KnowledgeBase:
        folders = [_folder(path) for path in sources]
        kb = self.store.create_kb(
            name,
            description=description,
            scope=scope,
            chunk_settings=chunk_settings or self.settings.chunk,
        )
        try:
            for folder in folders:
                self.store.add_source(kb.id, str(folder))
        except Exception:
            self.store.delete_kb(kb.id)
            raise
        return self.store.get_kb_by_id(kb.id)

    def update_kb(self, name: str, chunk_settings: ChunkSettings) -> KnowledgeBase:
        """New chunking settings; the next pass re-chunks (and re-embeds what changed)."""
        kb = self.store.get_kb(name)
        self.store.update_kb_chunking(kb.id, chunk_settings)
        return self.store.get_kb_by_id(kb.id)

    # -- sources -----------------------------------------------------------------------------
    def sources(self, kb: str) -> list[Source]:
        return self.store.list_sources(self.store.get_kb(kb).id)

    def add_source(self, kb: str, path: Path) -> Source:
        return self.store.add_source(self.store.get_kb(kb).id, str(_folder(path)))

    def remove_source(self, kb: str, path_or_label: str) -> int:
        """Stop following a folder (by path or label); its documents are dropped."""
        base = self.store.get_kb(kb)
        wanted = path_or_label.rstrip("/")
        for source in self.store.list_sources(base.id):
            if wanted in (source.label, source.path, str(Path(wanted).expanduser().resolve())):
                return self.store.remove_source(base.id, source.id)
        raise NotFound(f"{kb} follows no folder {path_or_label!r}; `kb sources list` shows them")

    def kb(self, name: str) -> KnowledgeBase:
        return self.store.get_kb(name)

    def knowledge_bases(self, *, totals: bool = True) -> list[KnowledgeBase]:
        """Every base; ``totals=False`` skips counting their documents (a read of every
        document row) where only names and settings are needed."""
        return self.store.list_kbs(totals=totals)

    def delete_kb(self, name: str) -> None:
        self.store.delete_kb(self.store.get_kb(name).id)

    def ensure_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base called ``name``, created with default settings if needed."""
        if any(kb.name == name for kb in self.store.list_kbs()):
            return self.store.get_kb(name)
        return self.create_kb(name)

    # -- documents ---------------------------------------------------------------------------
    def add(
        self,
        paths: Sequence[Path],
        kb: str = DEFAULT_KB,
        on_progress: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
    ) -> IngestReport:
        """Index files and folders into ``kb`` (created if needed). Folders become sources the
        base follows (``sync`` and ``watch`` keep them up to date); files are added as they
        are."""
        for path in paths:
            if not path.exists():
                raise NotFound(f"{path} does not exist; check the path and try again")
        with self.ingesting():
            base = self.ensure_kb(kb)
            sources = [self._source_for(base, path) for path in paths if path.is_dir()]
            files = [SourceFile(p, p.name) for p in paths if not p.is_dir()]
            return self.syncer.sync(
                base, sources=sources, extra_files=files, on_progress=on_progress, stop=stop
            )

    def _source_for(self, kb: KnowledgeBase, path: Path) -> Source:
        folder = str(_folder(path))
        for source in self.store.list_sources(kb.id):
            if source.path == folder:
                return source
        return self.store.add_source(kb.id, folder)

    def sync(
        self,
        kb: str | None = None,
        *,
        full: bool = False,
        stop: threading.Event | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> dict[str, IngestReport]:
        """One pass over the folders of ``kb`` (default: every base that has folders)."""
        with self.ingesting():
            bases = [self.store.get_kb(kb)] if kb else self.store.list_kbs()
            reports: dict[str, IngestReport] = {}
            for base in bases:
                if kb is None and not self.store.list_sources(base.id):
                    continue
                if stop is not None and stop.is_set():
                    break
                reports[base.name] = self.syncer.sync(
                    base, full=full, stop=stop, on_progress=on_progress
                )
            return reports

    def watch(
        self,
        kb: str | None = None,
        *,
        stop: threading.Event,
        rescan_seconds: float = DEFAULT_RESCAN_SECONDS,
        on_report: Callable[[KnowledgeBase, IngestReport], None] | None = None,
    ) -> None:
        """Keep the folders of ``kb`` (default all) indexed until ``stop`` is set."""

        def bases() -> list[KnowledgeBase]:
            return [self.store.get_kb(kb)] if kb else self.store.list_kbs()

        def folders(base: KnowledgeBase) -> list[Path]:
            return [Path(s.path) for s in self.store.list_sources(base.id)]

        def run_pass(base: KnowledgeBase) -> IngestReport:
            report = self.syncer.sync(self.store.get_kb_by_id(base.id), stop=stop)
            if on_report is not None:
                on_report(base, report)
            return report

        with self.ingesting():
            watch(bases, folders, run_pass, stop, rescan_seconds=rescan_seconds)

    def documents(self, kb: str, state: DocumentState | None = None) -> list[DocumentRecord]:
        return self.store.list_documents(self.store.get_kb(kb).id, state)

    def read(self, kb: str, document_id: str, start: int = 0, max_chars: int = 20_000) -> str:
        """A bounded window of a document's extracted text."""
        text = self.store.document_text(self.store.get_kb(kb).id, document_id)
        return text[start : start + max_chars]

    # -- search ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        kb: str | Sequence[str] | None = None,
        top_k: int = 10,
        mode: Mode | str = Mode.HYBRID,
        rerank: bool = False,
        document_ids: Sequence[str] | None = None,
        neighbors: int = 0,
        fusion: str = "rrf",
    ) -> SearchResponse:
        names = (kb,) if isinstance(kb, str) else tuple(kb or ())
        request = SearchRequest(
            query=query,
            knowledge_bases=names,
            top_k=top_k,
            mode=Mode(mode) if mode in tuple(Mode) else mode,  # type: ignore[arg-type]
            rerank=rerank,
            document_ids=tuple(document_ids) if document_ids is not None else None,
            neighbors=neighbors,
            fusion=fusion,
        )
        return self.searcher.search(request)

    # -- life ----------------------------------------------------------------------------------
    def close(self) -> None:
        self.searcher.close()
        self.store.close()
        for client in (self.embedder, self.reranker):  # HTTP ones hold pooled connections
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


def open_lorebase(
    data_dir: Path | str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | str | None = "configured",
    reranker: Reranker | str | None = "configured",
    holder: str = "lorebase",
) -> Lorebase:
    """Open (creating if needed) the lorebase in ``data_dir`` (default: ``LOREBASE_HOME`` or
    the per-user data directory). ``embedder`` overrides the configured one (``None`` for
    keyword only), ``reranker`` likewise (``None``: searches asking to rerank keep the fused
    order). ``holder`` names this process in the ingestion lock's message."""
    if settings is None:
        settings = Settings.from_env(Path(data_dir) if data_dir is not None else None)
    store = build_store(settings)
    chosen = (
        build_embedder(settings.embed, settings.model_cache)
        if embedder == "configured"
        else embedder
    )
    reorder = build_reranker(settings.rerank) if reranker == "configured" else reranker
    return Lorebase(settings, store, chosen, holder, reorder)  # type: ignore[arg-type]
