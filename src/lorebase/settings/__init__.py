"""Settings, built once and passed down. Frozen; validated on construction."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lorebase.errors import InvalidInput
from lorebase.settings.embedders import BUNDLED, EmbedderConfig
from lorebase.settings.embedders_file import embedders_path, load_embedders

MB = 1024 * 1024
EXPORT_KEY_ENV = "LOREBASE_EXPORT_KEY"
"""The variable the command line reads an export's passphrase from (never a setting: it seals
one file, and is given when that file is written or read)."""
GB = 1024 * MB
# Below this a worker process cannot even import the readers.
MIN_WORKER_MEMORY = 128 * MB


@dataclass(frozen=True, slots=True)
class ExtractSettings:
    """Limits for reading one file.

    ``max_file_bytes``: files larger than this are ``too_large`` without being read.
    ``max_expanded_bytes``: bound on what a container (docx zip parts, PDF content streams)
    may decompress to: the decompression-bomb guard.
    ``max_text_chars``: bound on the extracted text of one document.

    Every file is read in a worker process (``lorebase.extract.sandbox``) bounded by:
    ``max_memory_bytes``: the worker's address space (RLIMIT_AS); past it the file is
    ``too_large``. Python with every reader loaded takes ~55 MB; the largest real documents
    measured peak under 150 MB.
    ``max_seconds``: CPU seconds for one file (RLIMIT_CPU); past it the file is ``timeout``.
    The parent also gives up after twice this in wall-clock time (plus a second).
    ``max_result_bytes``: bound on the extraction sent back (pickled); past it ``too_large``.
    ``workers``: most worker processes kept warm; they start on first use.

    Documents inside documents (a mail's attachments, a mailbox's messages) are read in the
    same worker, within the same limits: at most ``max_parts`` of them per file (the rest are
    left out, with a warning), nested at most ``max_part_depth`` deep (an attachment of an
    attachment of a mail is depth 2; 0: none is read).

    Images and scanned pages are read by OCR when the ``ocr`` extra is installed and ``ocr``
    is on; an image over ``max_image_pixels`` pixels is ``too_large`` before it is decoded.

    And for one folder source as a whole: past ``max_source_files`` files or
    ``max_source_bytes`` bytes its walk stops adding files (in path order) and the pass says
    how many were left out (``over_source_limit``).
    """

    max_file_bytes: int = 64 * MB
    max_expanded_bytes: int = 512 * MB
    max_text_chars: int = 64 * 1024 * 1024
    max_memory_bytes: int = 1024 * MB
    max_seconds: float = 60.0
    max_result_bytes: int = 512 * MB
    workers: int = 2
    max_source_files: int = 50_000
    max_source_bytes: int = 2 * GB
    max_parts: int = 100
    max_part_depth: int = 3
    ocr: bool = True
    max_image_pixels: int = 60_000_000
    lowered: bool = False
    """Workers read files at a lower CPU priority than the process (``serve`` and ``worker``:
    requests come first; see :mod:`lorebase.priority`)."""

    def __post_init__(self) -> None:
        for name in (
            "max_parts",
            "max_image_pixels",
            "max_file_bytes",
            "max_expanded_bytes",
            "max_text_chars",
            "max_result_bytes",
            "max_source_files",
            "max_source_bytes",
        ):
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be a positive number")
        if self.max_part_depth < 0:
            raise InvalidInput("max_part_depth must be 0 (attachments are not read) or more")
        if self.max_memory_bytes < MIN_WORKER_MEMORY:
            raise InvalidInput(f"max_memory_bytes must be at least {MIN_WORKER_MEMORY // MB} MB")
        if not 0 < self.max_seconds <= 24 * 3600:
            raise InvalidInput("max_seconds must be between 0 and 86400")
        if not 1 <= self.workers <= 64:
            raise InvalidInput("workers must be between 1 and 64")


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


DEFAULT_RERANK_DEADLINE = 1.0
DEFAULT_EMBED_DEADLINE = 10.0
DEFAULT_NO_ANSWER_THRESHOLD = 0.35
"""Cosine below which a passage the keyword arm did not find counts as "nothing relevant". The
rule: the 95th percentile of the best cosine an off-topic question reaches in a corpus it is not
about, measured with the bundled MiniLM on two unrelated public sets (Cranfield questions
against the CISI corpus and the reverse, ~1.4k documents each; ``bench/eval.py --null``). No
labelled unanswerable question was used to pick it. Search cuts with it (the relevance floor)
and ``lorebase eval`` reports no-answer accuracy with it."""


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """How a search decides what to return.

    ``embed_deadline``: seconds a search waits for a model server to embed the query; past
    it the bases that model serves are searched by keyword (``embedder_unavailable``), like
    those of a server that is down. A local model is not held to it.
    ``rerank_deadline``: seconds a search waits for the reranker; past it the fused order is
    kept (``rerank_timeout``). A reply that late would be thrown away, so an HTTP reranker's
    own timeouts are no longer than this either.
    ``no_answer_threshold``: the relevance floor (see :data:`DEFAULT_NO_ANSWER_THRESHOLD`): a
    hit the keyword arm did not find and whose dense (cosine) score is under it is not an
    answer; a search left with no hit says ``no_answer``.
    """

    rerank_deadline: float = DEFAULT_RERANK_DEADLINE
    no_answer_threshold: float = DEFAULT_NO_ANSWER_THRESHOLD
    embed_deadline: float = DEFAULT_EMBED_DEADLINE

    def __post_init__(self) -> None:
        if not 0 < self.embed_deadline <= 600:
            raise InvalidInput(
                "the embed deadline must be between 0 and 600 seconds (LOREBASE_EMBED_DEADLINE)"
            )
        if not 0 < self.rerank_deadline <= 600:
            raise InvalidInput(
                "the rerank deadline must be between 0 and 600 seconds (LOREBASE_RERANK_DEADLINE)"
            )
        if not -1.0 <= self.no_answer_threshold <= 1.0:
            raise InvalidInput(
                "the no-answer threshold is a cosine between -1 and 1 "
                "(LOREBASE_NO_ANSWER_THRESHOLD)"
            )


def is_loopback(host: str) -> bool:
    """A host name or address of this machine only (what may serve without keys)."""
    return host in ("localhost", "::1") or host.startswith("127.")


MAX_SERVING_PROCESSES = 64


@dataclass(frozen=True, slots=True)
class SiblingPlace:
    """Where one process of ``serve`` over the embedded store stands among the server's
    processes: the private folder of their message sockets, its index, how many there are and
    which of them indexes. The first (index 0) holds the server's lock and starts the others;
    the indexer (``indexer``) runs the ingestion jobs and follows the folders, and the others
    hand it the jobs they are asked for (:mod:`lorebase.siblings`). An indexer of its own
    (``serve --indexer``, the default: the last index) answers no request; otherwise
    the first indexes too."""

    folder: Path
    index: int
    count: int
    indexer: int = 0

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def runs_jobs(self) -> bool:
        """This process runs the ingestion jobs and follows the folders."""
        return self.index == self.indexer

    @property
    def indexer_apart(self) -> bool:
        """The server indexes in a process of its own (not the first)."""
        return self.indexer != 0

    @property
    def answers(self) -> bool:
        """This process answers requests (every one but an indexer of its own)."""
        return not (self.indexer_apart and self.runs_jobs)


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """How ``lorebase serve`` runs: where it listens, whether it asks for API keys, and the
    bounds of its background work (uploads waiting, worker threads, folder rescans)."""

    host: str = "127.0.0.1"
    port: int = 7700
    auth: bool = True
    max_upload_bytes: int = 64 * MB
    queue_size: int = 256
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    rescan_seconds: float = 60.0
    watch: bool = True
    # Run the ingestion queue's workers in this process (``serve --no-ingest``: an API
    # process only, leaving the jobs to ``lorebase worker`` processes; a shared store only).
    ingest: bool = True
    # How long a claimed job stays claimed without a heartbeat (a shared store's jobs table).
    lease_seconds: float = 30.0
    # Host names requests may name besides the loopback ones (``--allowed-host``; "*": any,
    # for a proxy that checks them itself): a DNS-rebinding page's own name is refused.
    allowed_hosts: tuple[str, ...] = ()
    # Processes answering requests on the one port (``--processes``): searches use every core
    # (one process holds Python's interpreter lock for most of a search).
    processes: int = 1
    # Over the embedded store, index in a process of its own at a lower CPU priority
    # (``serve --indexer``, its default): a search never waits for the interpreter
    # while a document is read, chunked and written (bench/lean.py's ingest part).
    indexer_process: bool = False
    # This process's place among them, over the embedded store (None: alone, or a shared
    # store, where every process is a full server).
    sibling: SiblingPlace | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.processes <= MAX_SERVING_PROCESSES:
            raise InvalidInput(
                f"--processes must be between 1 and {MAX_SERVING_PROCESSES} (one per core is "
                "plenty)"
            )
        if not self.auth and not is_loopback(self.host):
            raise InvalidInput(
                f"refusing to serve on {self.host} without API keys: bind to 127.0.0.1 or "
                "turn keys on"
            )
        if not 1 <= self.port <= 65535:
            raise InvalidInput("the port must be between 1 and 65535")
        for name in ("max_upload_bytes", "queue_size", "workers", "lease_seconds"):
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be a positive number")
        for name in self.allowed_hosts:
            if name != "*" and not re.fullmatch(HOST_NAME, name):
                raise InvalidInput(
                    "an allowed host is a host name or address as clients write it in URLs "
                    "(docs.example.com, 10.0.0.5, [fd00::5]; no port, no scheme), or * for any"
                )


HOST_NAME = r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\]"
"""A host name, an IPv4 address, or an IPv6 address in brackets, as a URL writes it."""

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
LEXICAL_ENGINES = ("tantivy", "fts5")
DEFAULT_CHAT_URL = "http://127.0.0.1:11434/v1"  # Ollama's OpenAI-compatible API


@dataclass(frozen=True, slots=True)
class ChatConfig:
    """The chat model ``ask`` talks to, as configured (checked when a chat is started:
    ``model`` may be missing until then), and the locality gate's allowlist and opt-in."""

    url: str = DEFAULT_CHAT_URL
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    local_hosts: tuple[str, ...] = ()
    allow_cloud: bool = False


DEFAULT_AUDIT_ROWS = 100_000
"""The most entries the audit log keeps (``LOREBASE_AUDIT_ROWS``): the oldest go first."""
DEFAULT_MAX_NOTE_CHARS = 20_000
MAX_NOTE_CHARS_CEILING = 60_000  # a note's JSON (4 bytes a character at worst) fits a request


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a lorebase instance is built from; see :func:`Settings.from_env`. Nothing
    else in lorebase reads the environment."""

    data_dir: Path
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    extract: ExtractSettings = field(default_factory=ExtractSettings)
    chunk: ChunkSettings = field(default_factory=ChunkSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    chat: ChatConfig = field(default_factory=ChatConfig)
    # The data key as base64 text (``LOREBASE_DATA_KEY``); None: the key file in data_dir.
    data_key: str | None = field(default=None, repr=False)
    # Where the knowledge bases live (``LOREBASE_STORE``, ``--store``): a ``postgresql://``
    # URL, shared by every process that names it; None: the SQLite file in data_dir. Not in
    # repr: the URL may hold a password.
    store_url: str | None = field(default=None, repr=False)
    # A schema of that database to keep everything in (an evaluation's own index); None: the
    # database's default.
    store_schema: str | None = None
    # The embedded store's keyword engine (``LOREBASE_LEXICAL``): ``tantivy`` (a side index
    # per base, the default) or ``fts5`` (inside the SQLite file); see store/sqlite/lexical.py.
    lexical: str = "tantivy"
    # Named embedders a base can be made with (``embedders.toml``); ``bundled`` is always
    # there even when not listed. ``default_embedder``: the one a new base gets (None: the
    # bundled model when the process embedder is the bundled one, else the process's own).
    embedders: tuple[EmbedderConfig, ...] = ()
    default_embedder: str | None = None
    # The longest note (``lorebase notes add``) in characters (``LOREBASE_MAX_NOTE_CHARS``).
    max_note_chars: int = DEFAULT_MAX_NOTE_CHARS
    # The most entries the audit log keeps (``LOREBASE_AUDIT_ROWS``); the oldest are dropped.
    audit_rows: int = DEFAULT_AUDIT_ROWS
    # Whether users may keep an API key of their own for an HTTP embedder, which their
    # personal bases then use (``LOREBASE_USER_EMBEDDER_KEYS``, 1/0; default on).
    user_embedder_keys: bool = True
    # ``serve`` and ``worker``: the bundled model embeds documents, and extraction workers read
    # files, below the CPU priority of the threads that answer requests (lorebase.priority);
    # a command the user waits on (``add``) keeps every core at its own priority.
    yield_to_requests: bool = False

    @property
    def answers_queries(self) -> bool:
        """Whether this process answers questions (all but a server's indexer of its own)."""
        place = self.serve.sibling
        return place is None or place.answers

    def serving(self) -> Settings:
        """These settings for a process that answers requests while it indexes."""
        return dataclasses.replace(
            self, yield_to_requests=True, extract=dataclasses.replace(self.extract, lowered=True)
        )

    def __post_init__(self) -> None:
        if self.audit_rows < 1:
            raise InvalidInput("LOREBASE_AUDIT_ROWS must be a whole number of at least 1")
        if not 1 <= self.max_note_chars <= MAX_NOTE_CHARS_CEILING:
            raise InvalidInput(
                f"LOREBASE_MAX_NOTE_CHARS must be between 1 and {MAX_NOTE_CHARS_CEILING}"
            )
        if self.lexical not in LEXICAL_ENGINES:
            raise InvalidInput(
                f"unknown lexical engine {self.lexical!r} (LOREBASE_LEXICAL); choose one of "
                f"{', '.join(LEXICAL_ENGINES)}"
            )
        names = [config.name for config in self.embedders]
        if len(set(names)) != len(names):
            raise InvalidInput("two embedders have the same name; each needs its own")
        if self.default_embedder is not None and self.default_embedder not in {
            BUNDLED,
            *names,
        }:
            raise InvalidInput(
                f"the default embedder {self.default_embedder!r} is not one of the named "
                f"embedders ({', '.join(sorted({BUNDLED, *names}))})"
            )
        if self.store_url is not None and not self.store_url.startswith(POSTGRES_SCHEMES):
            raise InvalidInput(
                "the store must be a postgresql:// URL (LOREBASE_STORE or --store); without "
                "one lorebase keeps everything in the SQLite file of its data directory"
            )

    @property
    def shared_store(self) -> bool:
        """Whether the store is a database many processes (on many machines) share."""
        return self.store_url is not None

    @property
    def database(self) -> Path:
        """The SQLite file of the embedded store (unused with a ``store`` URL)."""
        return self.data_dir / "lorebase.db"

    @property
    def model_cache(self) -> Path:
        return self.data_dir / "models"

    @classmethod
    def from_env(
        cls,
        data_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        embedder: str | None = None,
        reranker: str | None = None,
        store_url: str | None = None,
    ) -> Settings:
        """Settings from arguments, then ``LOREBASE_*`` environment variables, then defaults.
        The arguments (the CLI's global options) win over the variables before the settings
        are checked, so ``reranker="none"`` works around an incomplete
        ``LOREBASE_RERANKER=http``.

        ``LOREBASE_HOME`` (data directory), ``LOREBASE_EMBEDDER`` (onnx | http | fake | none),
        ``LOREBASE_EMBED_URL``, ``LOREBASE_EMBED_MODEL``, ``LOREBASE_EMBED_API_KEY``,
        ``LOREBASE_EMBED_QUANTIZE`` (1/0); ``LOREBASE_RERANKER`` (none | http | fake),
        ``LOREBASE_RERANK_URL``, ``LOREBASE_RERANK_MODEL``, ``LOREBASE_RERANK_API_KEY``,
        ``LOREBASE_RERANK_DEADLINE`` (seconds a search waits for the reranker, default 1);
        ``LOREBASE_EMBED_DEADLINE`` (seconds a search waits for a model server to embed the
        query, default 10);
        ``LOREBASE_NO_ANSWER_THRESHOLD`` (the relevance floor's cosine, default 0.35);
        ``LOREBASE_CHAT_URL``, ``LOREBASE_CHAT_MODEL``, ``LOREBASE_CHAT_API_KEY``,
        ``LOREBASE_LOCAL_HOSTS`` (comma-separated hosts or networks a chat model may run on and
        still count as local), ``LOREBASE_ALLOW_CLOUD_MODEL_ACCESS`` (1/0);
        ``LOREBASE_DATA_KEY`` (the data key, base64; default: ``data.key`` in the data
        directory); ``LOREBASE_STORE`` (a ``postgresql://`` URL; default: the SQLite file in
        the data directory); ``LOREBASE_LEXICAL`` (tantivy | fts5: the SQLite store's keyword
        engine); ``LOREBASE_EMBEDDERS`` (the embedders file, TOML: the named embedders a
        knowledge base can be made with and the default one; it must exist when set; unset:
        ``embedders.toml`` in the data directory when it is there; the format is in
        :mod:`lorebase.settings.embedders_file`); ``LOREBASE_MAX_NOTE_CHARS`` (the longest
        note, in characters; default 20000); ``LOREBASE_AUDIT_ROWS`` (the most entries the
        audit log keeps, the oldest dropped first; default 100000);
        ``LOREBASE_USER_EMBEDDER_KEYS`` (1/0: whether users may keep their own key for an HTTP
        embedder, used by their personal bases; default 1).
        """
        env = os.environ if environ is None else environ
        home = data_dir or (Path(env["LOREBASE_HOME"]) if env.get("LOREBASE_HOME") else None)
        if home is None:
            from platformdirs import user_data_dir

            home = Path(user_data_dir("lorebase", appauthor=False))
        home = home.expanduser()
        embedders_file = embedders_path(env, home)
        embedders, default_embedder = (
            load_embedders(embedders_file, env) if embedders_file is not None else ((), None)
        )
        embed = EmbedSettings(
            kind=embedder or env.get("LOREBASE_EMBEDDER", "onnx"),
            url=env.get("LOREBASE_EMBED_URL"),
            model=env.get("LOREBASE_EMBED_MODEL"),
            api_key=env.get("LOREBASE_EMBED_API_KEY"),
            quantize=env.get("LOREBASE_EMBED_QUANTIZE", "1") not in ("0", "false", "no"),
        )
        rerank = RerankSettings(
            kind=reranker or env.get("LOREBASE_RERANKER", "none"),
            url=env.get("LOREBASE_RERANK_URL"),
            model=env.get("LOREBASE_RERANK_MODEL"),
            api_key=env.get("LOREBASE_RERANK_API_KEY"),
        )
        search = SearchSettings(
            rerank_deadline=_number(
                env, "LOREBASE_RERANK_DEADLINE", DEFAULT_RERANK_DEADLINE, "a number of seconds"
            ),
            embed_deadline=_number(
                env, "LOREBASE_EMBED_DEADLINE", DEFAULT_EMBED_DEADLINE, "a number of seconds"
            ),
            no_answer_threshold=_number(
                env, "LOREBASE_NO_ANSWER_THRESHOLD", DEFAULT_NO_ANSWER_THRESHOLD, "a cosine"
            ),
        )
        chat = ChatConfig(
            url=env.get("LOREBASE_CHAT_URL") or DEFAULT_CHAT_URL,
            model=env.get("LOREBASE_CHAT_MODEL") or None,
            api_key=env.get("LOREBASE_CHAT_API_KEY") or None,
            local_hosts=tuple(
                h.strip() for h in env.get("LOREBASE_LOCAL_HOSTS", "").split(",") if h.strip()
            ),
            allow_cloud=env.get("LOREBASE_ALLOW_CLOUD_MODEL_ACCESS", "").strip().lower()
            in TRUE_WORDS,
        )
        return cls(
            data_dir=home,
            embed=embed,
            rerank=rerank,
            search=search,
            chat=chat,
            data_key=env.get("LOREBASE_DATA_KEY", "").strip() or None,
            store_url=(store_url or env.get("LOREBASE_STORE", "")).strip() or None,
            lexical=env.get("LOREBASE_LEXICAL", "").strip() or "tantivy",
            embedders=embedders,
            default_embedder=default_embedder,
            max_note_chars=int(
                _number(env, "LOREBASE_MAX_NOTE_CHARS", DEFAULT_MAX_NOTE_CHARS, "a whole number")
            ),
            audit_rows=int(
                _number(env, "LOREBASE_AUDIT_ROWS", DEFAULT_AUDIT_ROWS, "a whole number")
            ),
            user_embedder_keys=env.get("LOREBASE_USER_EMBEDDER_KEYS", "1").strip().lower()
            in TRUE_WORDS,
        )


def _number(env: Mapping[str, str], name: str, default: float, what: str) -> float:
    """A number from the environment, or ``default`` when it is unset or empty."""
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{name} must be {what}, like {default}") from None
