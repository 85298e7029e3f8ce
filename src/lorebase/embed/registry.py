"""The named embedders of a lorebase: which model each knowledge base embeds with.

A base names its embedder when it is made (``kb create --embedder NAME``); its vectors are
made with that embedder and its queries embedded by it. A base that names none (made before
named embedders, or while the process embedder is not a named one) uses the process's own
embedder (``LOREBASE_EMBEDDER``), as every base did before. While a base is re-embedded
(``kb update --embedder NAME --reembed``) it *answers* with the embedder its current vectors
were made with and *indexes* with the one it is moving to, until the switch.

Embedders are built on first use (a process that never embeds for a base never loads its
model) and shared by every thread. Whether one is reachable is probed with a short timeout and
remembered for a little while (a listing of many bases asks once per embedder).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import urlsplit, urlunsplit

from lorebase.embed.base import Embedder, EmbedKind
from lorebase.errors import LorebaseError, NotFound, Unavailable
from lorebase.http_json import CONNECT_TIMEOUT, Transport
from lorebase.settings.embedders import BUNDLED, DEFAULT_LABEL, EmbedderConfig

if TYPE_CHECKING:
    from lorebase.embed.http import HttpEmbedder

# A probe gives up after this many seconds (a listing must not hang on a server that is down).
PROBE_SECONDS = 2.0
# A probe's answer is trusted this long.
PROBE_MAX_AGE = 30.0
PROBE_TEXT = "reachability probe"
# A search does not wait again on an embedder that failed to answer this recently: its bases
# are searched by keyword at once (a server that is down would otherwise cost every search
# its connection timeouts and retries).
DOWN_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Reachability:
    """Whether an embedder answered a probe just now; ``detail`` says why not (content-free:
    a host and a status, never a text)."""

    reachable: bool
    detail: str | None = None
    checked_at: float = 0.0


@dataclass(frozen=True, slots=True)
class KbEmbedders:
    """What a knowledge base embeds with: the name it answers with (its vectors' embedder)
    and the name it indexes with (the one it is being re-embedded to, else the same). None
    names the process's own embedder."""

    answering: str | None
    indexing: str | None


def kb_embedders(kb: Any) -> KbEmbedders:
    """The names a base's record holds (``embedder``, ``embedder_next``). Pure."""
    current: str | None = kb.embedder
    target: str | None = kb.embedder_next
    return KbEmbedders(current, target if target is not None else current)


def shown_name(name: str | None) -> str:
    """How people see an embedder's name: the name, or ``default`` for the process's own."""
    return name if name is not None else DEFAULT_LABEL


def public_url(url: str | None) -> str | None:
    """A URL without user name or password (what a listing may show)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def build_named(
    config: EmbedderConfig, cache_dir: Path, *, lowered: bool = False, queries: bool = True
) -> Embedder:
    """The embedder a configuration describes (its runtime imported now, its model loaded on
    first use; ``lowered``: the bundled model embeds documents at a lower CPU priority;
    ``queries`` off: in a process that answers no question, it makes one session)."""
    if config.kind == "fake":
        from lorebase.embed.fake import FakeEmbedder

        assert config.dimensions is not None  # checked by EmbedderConfig
        model = config.model or f"fake-{config.name}"
        languages = frozenset(config.languages) if config.languages is not None else None
        return FakeEmbedder(
            config.dimensions, model=model, batch_size=config.batch_size, languages=languages
        )
    if config.kind == "http":
        missing_key(config)
        return http_embedder(config, read_timeout=config.timeout)
    return bundled_model(cache_dir, quantize=config.quantize, lowered=lowered, queries=queries)


def missing_key(config: EmbedderConfig) -> None:
    """``Unavailable`` naming the variable when the key of ``config`` is not set here."""
    if config.missing_key is not None:
        raise Unavailable(
            f"the embedder {config.name} needs its API key in the environment variable "
            f"{config.missing_key}, which is not set where lorebase runs; set it, or remove "
            "api_key_env from the embedders file for a server that needs no key"
        )


def http_embedder(config: EmbedderConfig, **transport: Unpack[Transport]) -> HttpEmbedder:
    """The client of an ``http`` configuration (``transport``: its timeouts and retries)."""
    from lorebase.embed.http import HttpEmbedder

    assert config.url and config.model  # checked by EmbedderConfig
    batch = {"batch_size": config.batch_size} if config.batch_size is not None else {}
    return HttpEmbedder(
        config.url,
        config.model,
        api_key=config.api_key,
        dim=config.dimensions,
        truncate=config.truncate,
        query_prefix=config.query_prefix,
        document_prefix=config.document_prefix,
        languages=frozenset(config.languages) if config.languages is not None else None,
        **batch,
        **transport,
    )


def bundled_model(
    cache_dir: Path, *, quantize: bool, lowered: bool = False, queries: bool = True
) -> Embedder:
    """The bundled MiniLM (``Unavailable`` saying what to install when its runtime is not)."""
    try:
        from lorebase.embed.onnx import OnnxEmbedder
    except ImportError as error:  # onnxruntime or tokenizers missing
        raise Unavailable(
            "the local embedding runtime is not installed; run "
            "`pip install onnxruntime tokenizers` (or reinstall lorebase)"
        ) from error
    return OnnxEmbedder(cache_dir, quantize=quantize, lowered=lowered, queries=queries)


class Embedders:
    """The named embedders, the process's own (``default``), and which name a new base gets
    (``default_name``)."""

    def __init__(
        self,
        configs: Sequence[EmbedderConfig],
        cache_dir: Path,
        *,
        default: Embedder | None = None,
        default_name: str | None = None,
        build: Callable[[EmbedderConfig, Path], Embedder] = build_named,
        clock: Callable[[], float] = time.monotonic,
        query_seconds: float | None = None,
    ) -> None:
        """``query_seconds``: how long a search waits for a model server's query vector; its
        query client gives up no later (one retry, no long backoff), so a server that hangs
        does not keep a thread, or a finished command's exit, for its whole read timeout."""
        named = {config.name: config for config in configs}
        named.setdefault(BUNDLED, EmbedderConfig(BUNDLED, kind="bundled"))
        self._configs = dict(sorted(named.items()))
        if default_name is not None:
            self.config(default_name)  # NotFound for an unknown name
        self.cache_dir = cache_dir
        self.default = default
        self.default_name = default_name
        # How to probe the process embedder when it is a server (LOREBASE_EMBEDDER=http).
        self.default_config: EmbedderConfig | None = None
        self._build = build
        self._clock = clock
        self._built: dict[str, Embedder] = {}
        self._query_clients: dict[str | None, Embedder] = {}
        self.query_seconds = query_seconds
        self._observers: list[Callable[[EmbedKind, float], None]] = []
        self._probed: dict[str | None, Reachability] = {}
        self._lock = threading.Lock()
        # A personal base's owner's own key for an HTTP embedder (see use_owner_keys).
        self._owner_keys: Callable[[str, str], str | None] | None = None
        self._owned: dict[tuple[str, str, bool], tuple[str, Embedder]] = {}

    # -- configuration -----------------------------------------------------------------------
    def configs(self) -> list[EmbedderConfig]:
        """Every named embedder, by name."""
        return list(self._configs.values())

    def names(self) -> list[str]:
        return list(self._configs)

    def config(self, name: str) -> EmbedderConfig:
        try:
            return self._configs[name]
        except KeyError:
            raise NotFound(
                f"there is no embedder named {name!r}; `lorebase embedders` lists them "
                f"({', '.join(self._configs)})"
            ) from None

    def threshold(self, name: str | None, default: float) -> float:
        """The relevance floor's cosine for an embedder's vectors (``default`` unless its
        configuration sets one)."""
        if name is None:
            name = self._named_default()
            if name is None:
                return default
        own = self.config(name).no_answer_threshold
        return default if own is None else own

    # -- embedders ---------------------------------------------------------------------------
    def get(self, name: str | None) -> Embedder | None:
        """The embedder called ``name`` (built on first use), or the process's own for None
        (None when it has none: keyword only)."""
        if name is None:
            return self.default
        config = self.config(name)
        with self._lock:
            embedder = self._built.get(name)
            if embedder is None:
                embedder = self._built[name] = self._build(config, self.cache_dir)
                for observer in self._observers:
                    if embedder is not self.default:
                        embedder.observe_batches(observer)
            return embedder

    def for_queries(self, name: str | None) -> Embedder | None:
        """The embedder a search embeds a query with: :meth:`get`'s, except that a model
        server's is a client of its own, held to ``query_seconds`` (same identity)."""
        embedder = self.get(name)
        config = self.config(name) if name is not None else self.default_config
        if embedder is None or not embedder.remote or config is None:
            return embedder
        if self.query_seconds is None or config.kind != "http":
            return embedder
        with self._lock:
            client = self._query_clients.get(name)
            if client is None:
                seconds = min(config.timeout, self.query_seconds)
                client = self._query_clients[name] = http_embedder(
                    config,
                    read_timeout=seconds,
                    connect_timeout=min(CONNECT_TIMEOUT, seconds),
                    max_retries=1,
                    max_retry_after=1.0,
                    max_backoff=1.0,
                )
            return client

    def use_owner_keys(self, resolve: Callable[[str, str], str | None]) -> None:
        """``resolve(owner, name)``: the API key a user keeps for the named HTTP embedder
        (None: none, or not allowed), which their personal bases are embedded with."""
        self._owner_keys = resolve

    def for_base(self, name: str | None, kb: Any, *, queries: bool = False) -> Embedder | None:
        """The embedder ``name`` as ``kb`` uses it: a personal base whose owner keeps a key of
        their own for this HTTP embedder is embedded with that key (same model, same
        identity); anything else as :meth:`get` (``queries``: :meth:`for_queries`) gives it."""
        key = self._owner_key(name, kb)
        if key is None or name is None:
            return self.for_queries(name) if queries else self.get(name)
        config = dataclasses.replace(self.config(name), api_key=key)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        slot = (name, str(kb.owner), queries)
        with self._lock:
            held = self._owned.get(slot)
            if held is not None and held[0] == digest:
                return held[1]
            if queries and self.query_seconds is not None:
                seconds = min(config.timeout, self.query_seconds)
                embedder = http_embedder(
                    config,
                    read_timeout=seconds,
                    connect_timeout=min(CONNECT_TIMEOUT, seconds),
                    max_retries=1,
                    max_retry_after=1.0,
                    max_backoff=1.0,
                )
            else:
                embedder = http_embedder(config)
            self._owned[slot] = (digest, embedder)
        if held is not None:  # the owner's key changed: the old client goes
            closing = getattr(held[1], "close", None)
            if callable(closing):
                closing()
        return embedder

    def owned(self, embedder: Embedder) -> bool:
        """Whether ``embedder`` is a client with a base owner's own key (its server's probes,
        made with the configured key, do not speak for it)."""
        with self._lock:
            return any(held is embedder for _, held in self._owned.values())

    def _owner_key(self, name: str | None, kb: Any) -> str | None:
        if self._owner_keys is None or name is None or kb is None:
            return None
        if getattr(kb, "scope", None) != "personal" or getattr(kb, "owner", None) is None:
            return None
        if self.config(name).kind != "http":
            return None
        return self._owner_keys(str(kb.owner), name)

    def observe_batches(self, observer: Callable[[EmbedKind, float], None]) -> None:
        """Call ``observer(kind, seconds)`` after every batch any of these embedders answers
        (metrics), those built later included."""
        with self._lock:
            self._observers.append(observer)
            built = [e for e in self._built.values() if e is not self.default]
        for embedder in [self.default, *built]:
            if embedder is not None:
                embedder.observe_batches(observer)

    def adopt(self, name: str, embedder: Embedder) -> None:
        """Use ``embedder`` for ``name`` (the process embedder when it is that model: one
        instance, one loaded model)."""
        self.config(name)
        with self._lock:
            self._built[name] = embedder

    def indexing(self, kb: Any) -> Embedder | None:
        """The embedder a base's new vectors are made with."""
        return self.get(kb_embedders(kb).indexing)

    # -- reachability ------------------------------------------------------------------------
    def reachability(self, name: str | None, *, max_age: float = PROBE_MAX_AGE) -> Reachability:
        """Whether the embedder answers (probed with a short timeout; remembered ``max_age``
        seconds)."""
        now = self._clock()
        with self._lock:
            known = self._probed.get(name)
        if known is not None and now - known.checked_at < max_age:
            return known
        found = self._probe(name, now)
        with self._lock:
            self._probed[name] = found
        return found

    def known_down(self, name: str | None, within: float = DOWN_SECONDS) -> Reachability | None:
        """The last failure of an embedder when it is more recent than ``within`` seconds."""
        with self._lock:
            known = self._probed.get(name)
        if known is None or known.reachable or self._clock() - known.checked_at >= within:
            return None
        return known

    def mark_unreachable(self, name: str | None, detail: str) -> None:
        """Remember that an embedder just failed to answer (a search saw it)."""
        with self._lock:
            self._probed[name] = Reachability(False, detail, self._clock())

    def _named_default(self) -> str | None:
        """The name the process embedder is built under, when it is a named one (the
        bundled model)."""
        with self._lock:
            same = [n for n, built in self._built.items() if built is self.default]
        return same[0] if same and self.default is not None else None

    def _probe(self, name: str | None, now: float) -> Reachability:
        if name is not None:
            return self._probe_config(self.config(name), now)
        embedder = self.default
        if embedder is None:
            return Reachability(False, "no embedder is configured (keyword only)", now)
        if self.default_config is not None:  # a server: probed with a short timeout
            return self._probe_config(self.default_config, now)
        same = self._named_default()
        if same is not None:  # the process embedder is a named one (the bundled model)
            return self._probe_config(self.config(same), now)
        return self._answers(embedder, now)

    def _probe_config(self, config: EmbedderConfig, now: float) -> Reachability:
        if config.kind == "bundled":
            from lorebase.embed.onnx import default_model_path, default_tokenizer_path

            if default_model_path() is None or default_tokenizer_path() is None:
                return Reachability(False, "the bundled model's packages are not installed", now)
            return Reachability(True, None, now)
        if config.kind == "http":
            try:
                missing_key(config)
            except Unavailable as error:
                return Reachability(False, str(error), now)
            # As configured (width, truncation, prefixes: a server answering with vectors of
            # another width is as good as down), with a short timeout and no retry.
            probe = http_embedder(
                config,
                read_timeout=PROBE_SECONDS,
                connect_timeout=PROBE_SECONDS,
                max_retries=0,
            )
            try:
                return self._answers(probe, now)
            finally:
                probe.close()
        return self._answers(self.get(config.name), now)

    @staticmethod
    def _answers(embedder: Embedder | None, now: float) -> Reachability:
        if embedder is None:
            return Reachability(False, "no embedder", now)
        try:
            embedder.embed_batch([PROBE_TEXT], "query")
        except LorebaseError as error:
            return Reachability(False, str(error), now)
        return Reachability(True, None, now)

    def close(self) -> None:
        """Close what was built here (HTTP clients hold pooled connections); the process
        embedder belongs to whoever passed it in."""
        with self._lock:
            built, self._built = list(self._built.values()), {}
            built += list(self._query_clients.values())
            built += [embedder for _, embedder in self._owned.values()]
            self._query_clients, self._owned = {}, {}
        for embedder in built:
            if embedder is self.default:
                continue
            closing = getattr(embedder, "close", None)
            if callable(closing):
                closing()
