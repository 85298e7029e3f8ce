"""Settings, built once and passed down. Frozen; validated on construction."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lorebase.errors import InvalidInput

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtractSettings:
    """Limits for reading one file.

    ``max_file_bytes``: files larger than this are ``too_large`` without being read.
    ``max_expanded_bytes``: bound on what a container (docx zip parts, PDF content streams)
    may decompress to: the decompression-bomb guard.
    ``max_text_chars``: bound on the extracted text of one document.
    """

    max_file_bytes: int = 64 * MB
    max_expanded_bytes: int = 512 * MB
    max_text_chars: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_expanded_bytes", "max_text_chars"):
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be a positive number")


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """How documents are cut into chunks.

    ``chunk_size``: most characters in one chunk (200-4000).
    ``max_tokens``: most estimated tokens in one chunk (see ``lorebase.chunk.tokens``); whichever
    of the two binds first ends the chunk. The default sits a little above the 256-token window
    of the bundled embedding model, since the estimate runs below real word-piece counts for
    long words.
    ``overlap``: characters the next chunk repeats from the end of the previous one.
    """

    chunk_size: int = 1200
    max_tokens: int = 320
    overlap: int = 200

    def __post_init__(self) -> None:
        if not 200 <= self.chunk_size <= 4000:
            raise InvalidInput("chunk_size must be between 200 and 4000 characters")
        if not 32 <= self.max_tokens <= 8192:
            raise InvalidInput("max_tokens must be between 32 and 8192")
        if not 0 <= self.overlap <= self.chunk_size // 2:
            raise InvalidInput("overlap must be between 0 and half of chunk_size")

    @property
    def key(self) -> str:
        """A short stable string naming these settings (part of chunk ids)."""
        return f"c{self.chunk_size}-t{self.max_tokens}-o{self.overlap}"


EMBEDDERS = ("onnx", "http", "fake", "none")


@dataclass(frozen=True, slots=True)
class EmbedSettings:
    """Which embedder to use. ``onnx`` is the bundled local default; ``http`` an
    OpenAI-compatible server (``url`` like ``http://127.0.0.1:11434/v1``); ``fake`` the
    deterministic test embedder; ``none`` keyword search only."""

    kind: str = "onnx"
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    quantize: bool = True
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.kind not in EMBEDDERS:
            raise InvalidInput(f"embedder must be one of: {', '.join(EMBEDDERS)}")
        if self.kind == "http" and not (self.url and self.model):
            raise InvalidInput("the http embedder needs a url and a model name")


RERANKERS = ("none", "http", "fake")


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """Which reranker reorders fused candidates when a search asks for it: ``none`` (the
    default: no package ships a local cross-encoder, so there is no bundled one), ``http``
    a reranking server (``url`` like ``http://127.0.0.1:8080/v1``: llama.cpp, vLLM,
    Jina/Cohere-style), ``fake`` the deterministic test reranker."""

    kind: str = "none"
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.kind not in RERANKERS:
            raise InvalidInput(f"reranker must be one of: {', '.join(RERANKERS)}")
        if self.kind == "http" and not (self.url and self.model):
            raise InvalidInput(
                "the http reranker needs a url and a model name: set LOREBASE_RERANK_URL "
                "and LOREBASE_RERANK_MODEL"
            )


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a lorebase instance is built from; see :func:`Settings.from_env`."""

    data_dir: Path
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    extract: ExtractSettings = field(default_factory=ExtractSettings)
    chunk: ChunkSettings = field(default_factory=ChunkSettings)

    @property
    def database(self) -> Path:
        return self.data_dir / "lorebase.db"

    @property
    def model_cache(self) -> Path:
        return self.data_dir / "models"

    @classmethod
    def from_env(
        cls, data_dir: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        """Settings from arguments, then ``LOREBASE_*`` environment variables, then defaults.

        ``LOREBASE_HOME`` (data directory), ``LOREBASE_EMBEDDER`` (onnx | http | fake | none),
        ``LOREBASE_EMBED_URL``, ``LOREBASE_EMBED_MODEL``, ``LOREBASE_EMBED_API_KEY``,
        ``LOREBASE_EMBED_QUANTIZE`` (1/0); ``LOREBASE_RERANKER`` (none | http | fake),
        ``LOREBASE_RERANK_URL``, ``LOREBASE_RERANK_MODEL``, ``LOREBASE_RERANK_API_KEY``.
        """
        env = os.environ if environ is None else environ
        home = data_dir or (Path(env["LOREBASE_HOME"]) if env.get("LOREBASE_HOME") else None)
        if home is None:
            from platformdirs import user_data_dir

            home = Path(user_data_dir("lorebase", appauthor=False))
        embed = EmbedSettings(
            kind=env.get("LOREBASE_EMBEDDER", "onnx"),
            url=env.get("LOREBASE_EMBED_URL"),
            model=env.get("LOREBASE_EMBED_MODEL"),
            api_key=env.get("LOREBASE_EMBED_API_KEY"),
            quantize=env.get("LOREBASE_EMBED_QUANTIZE", "1") not in ("0", "false", "no"),
        )
        rerank = RerankSettings(
            kind=env.get("LOREBASE_RERANKER", "none"),
            url=env.get("LOREBASE_RERANK_URL"),
            model=env.get("LOREBASE_RERANK_MODEL"),
            api_key=env.get("LOREBASE_RERANK_API_KEY"),
        )
        return cls(data_dir=home.expanduser(), embed=embed, rerank=rerank)
