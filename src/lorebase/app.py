"""The composition root: builds the store, embedder, ingestion and search from settings.

Everything else is handed what it needs; the CLI, library and (later) HTTP and MCP surfaces
are thin shells over :class:`Lorebase`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from lorebase.embed.base import Embedder
from lorebase.errors import NotFound, Unavailable
from lorebase.ingest.pipeline import Ingestor, IngestReport, Progress
from lorebase.search.service import SearchService
from lorebase.search.types import Mode, SearchRequest, SearchResponse
from lorebase.settings import ChunkSettings, EmbedSettings, Settings
from lorebase.store.base import DocumentRecord, DocumentState, KnowledgeBase, Scope, Store

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


def build_store(settings: Settings) -> Store:
    from lorebase.store.sqlite.store import SqliteStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return SqliteStore(settings.database)


class Lorebase:
    """A lorebase instance over one data directory. Use :func:`lorebase.open`."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.ingestor = Ingestor(store, embedder, settings.extract)
        self.searcher = SearchService(store, embedder)

    # -- knowledge bases ---------------------------------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope = Scope.PERSONAL,
        chunk_settings: ChunkSettings | None = None,
    ) -> KnowledgeBase:
        return self.store.create_kb(
            name,
            description=description,
            scope=scope,
            chunk_settings=chunk_settings or self.settings.chunk,
        )

    def kb(self, name: str) -> KnowledgeBase:
        return self.store.get_kb(name)

    def knowledge_bases(self) -> list[KnowledgeBase]:
        return self.store.list_kbs()

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
    ) -> IngestReport:
        """Index files and folders into ``kb`` (created if needed)."""
        for path in paths:
            if not path.exists():
                raise NotFound(f"{path} does not exist; check the path and try again")
        return self.ingestor.add(self.ensure_kb(kb), paths, on_progress)

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
) -> Lorebase:
    """Open (creating if needed) the lorebase in ``data_dir`` (default: ``LOREBASE_HOME`` or
    the per-user data directory). ``embedder`` overrides the configured one (``None`` for
    keyword only)."""
    if settings is None:
        settings = Settings.from_env(Path(data_dir) if data_dir is not None else None)
    store = build_store(settings)
    chosen = (
        build_embedder(settings.embed, settings.model_cache)
        if embedder == "configured"
        else embedder
    )
    return Lorebase(settings, store, chosen)  # type: ignore[arg-type]
