"""Approximate nearest-neighbour search (HNSW, via usearch) behind the :class:`VectorIndex` seam.

Exact search costs one pass over the matrix per query: ~1 ms at 10k x 384, ~12 ms of CPU at
100k and ~94 ms at 1M (FACTS.md), over the 15 ms and 30 ms budgets of a hybrid search there. An
HNSW graph answers in ~1-2 ms. It is used only when a knowledge base and identity hold at least
``ANN_THRESHOLD`` vectors; below, exact search is both fast enough and free of recall loss.

How the pieces fit:

- The stored vectors stay the reference: the graph only proposes candidates, which are
  rescored exactly against the rows loaded from the store, so scores mean what exact scores
  mean (and merge with exact results of other knowledge bases). The store hands an ANN-sized
  index its rows as :class:`Int8Rows` (the stored int8 codes and scales, 388 bytes a row at
  384-d instead of float32's 1536), which rescore ~100 candidates as fast and rank as float32
  does (``bench/quantize.py``). Filters that leave few rows, and any moment the
  graph is not ready, are answered exactly; results are never wrong, only slower.
- Graph keys name *chunk contents*, not matrix rows: 63 bits folded from the stored chunk id
  and the hash of its embedded text. Rows move between loads and SQLite reuses rowids; a key
  keeps its vector (same text, same identity), so a graph built at one generation can be
  brought to another by removing and adding the keys that differ, instead of being rebuilt.
- A :class:`GraphSlot` per (knowledge base, identity) owns the graph and keeps it in sync with
  the latest loaded rows, in a background thread by default: the first build at 1M takes
  minutes on 2 cores and must not hold up a search. Rows the graph does not hold yet are
  searched exactly next to it, so a lagging graph still gives complete answers.
- The graph is saved as a side file next to the database (``<db>.ann/kb<K>-identity<I>``),
  rewritten after a build and after enough changes. It is a cache: deleting it (or a version,
  dimension or dtype mismatch) only means a rebuild. Its metadata records the knowledge base
  generation it reflects; correctness never depends on it, since the key diff is always
  taken against the rows just loaded from the vectors table.

usearch is a dependency of lorebase; an environment without it (installed by hand with
``--no-deps``) searches every index exactly, and a warning says how to install it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import math
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lorebase.priority import lower_this_thread
from lorebase.private import narrow, private_folder
from lorebase.store.vectors import (
    VECTOR_DTYPE,
    ExactIndex,
    Int8ExactIndex,
    Int8Rows,
    VectorIndex,
    encode_int8,
    top_k,
)

log = logging.getLogger(__name__)

ANN_THRESHOLD = 20_000
"""Rows from which a knowledge base and identity get a graph. Exact search costs ~0.12 ms of
CPU per thousand 384-d rows (einsum, memory-bound): 1.2 ms at 10k but ~12 ms at 100k, most of a
15 ms hybrid budget there (bench/README.md, "Search latency"); the graph answers in ~1 ms and
builds in the background in seconds at these sizes, exact search answering meanwhile."""
CONNECTIVITY = 16  # HNSW M
EXPANSION_ADD = 128  # efConstruction
EXPANSION_SEARCH = 512
"""ef: the search beam. Measured at 1M x 384 fake-embedder vectors with the first (f16) graph
(a hard set: recall is higher on real embeddings), 100 candidates rescored: ef 128 ->
recall@10 .61 in 1.7 ms, 256 -> .73 / 2.6 ms, 512 -> .82 / 4.6 ms (p95 9.9), 1024 -> .89 /
9.4 ms (p95 18)."""
ANN_CANDIDATES = 100
"""The graph is asked for at least this many neighbours, which are rescored exactly: asking for
more than k costs little and recovers most of what the graph ranks slightly out of order."""
GRAPH_DTYPE = "i8"
GRAPH_METRIC = "cos"
"""The graph holds the stored int8 codes themselves, compared by cosine, which ignores each
vector's scale (so the codes need no decoding, and the query is quantised the same way); it
is used only to walk the graph, scores come from the loaded rows. Measured at 50k x 384
fake-embedder vectors, 100 candidates rescored (load ~13 on 2 cores): f16 + inner product
(the first form) 1,036 B resident per vector, build 167 s, recall@10 .950; i8 codes + cosine
614 B, build 82 s, recall@10 .957."""
ADD_BATCH_ROWS = 2_000
"""Rows are handed to the graph this many at a time (float32 ones quantised per batch); a
build asked to stop does so between two batches (well under a second at 1M on 2 cores)."""

Rows = np.ndarray | Int8Rows
"""The rows an index searches: a float32 matrix or the stored int8 form."""
EXACT_FILTER_SHARE = 0.05
"""A document filter allowing fewer than this share of rows is answered exactly over those
rows (a gather of at most 5% of the matrix, ~5 ms at 1M), not through the graph."""
EXACT_ROWS_PER_CANDIDATE = 40
"""Allowed rows scored exactly in the time the graph takes per neighbour asked of it (measured
at 1M: ~0.13 us a row of a kept subset, ~5 us a neighbour at 2,000): a filter allowing no more
than this many rows per neighbour a filtered graph search would ask for is answered exactly."""
MAX_FILTER_CANDIDATES = 2_000
"""Filtered graph search over-fetches by 1 / allowed share (times :data:`FILTER_SLACK`), up to
this many neighbours; when that still leaves fewer than k allowed hits, the filter is answered
exactly."""
FILTER_SLACK = 2.0
"""How much more than 1 / allowed share a filtered graph search asks for: the allowed rows are
not spread evenly among a query's neighbours, and asking for exactly the share's worth left
fewer than k about half the time (each then answered exactly: bench/filters.py)."""
REBUILD_SHARE = 0.5
"""When more than this share of the keys differ, building anew is cheaper than editing."""
SAVE_SHARE = 0.01
"""The side file is rewritten once this share of rows changed since it was saved; smaller
differences are cheap to apply again at the next load."""
SIDE_FILE_VERSION = 2  # 2: int8 codes compared by cosine (1: f16, inner product)
INSTALL_HINT = "pip install 'usearch>=2.12'"
_KEY_MASK = np.uint64((1 << 63) - 1)

Loader = Callable[[], Any]


def exact_index(rows: Rows) -> ExactIndex:
    """Exact search over rows in either form."""
    return Int8ExactIndex(rows) if isinstance(rows, Int8Rows) else ExactIndex(rows)


class _Builds:
    """The safety net for a process that exits without closing its store: the first
    background build registers one ``atexit`` hook that stops every build still running
    (``atexit`` runs while daemon threads still do). Closing the store is the usual way."""

    def __init__(self) -> None:
        self._slots: weakref.WeakSet[GraphSlot] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._hooked = False

    def add(self, slot: GraphSlot) -> None:
        with self._lock:
            if not self._hooked:
                atexit.register(self.stop_all)
                self._hooked = True
            self._slots.add(slot)

    def stop_all(self) -> None:
        for slot in list(self._slots):
            slot.stop(timeout=60)


_BUILDS = _Builds()


class Stopped(Exception):
    """A graph build was asked to stop (its store is closing)."""


def add_rows(
    graph: Any,
    keys: np.ndarray,
    rows: Rows,
    positions: np.ndarray | None = None,
    stopping: Callable[[], bool] | None = None,
) -> None:
    """Add rows (these ``positions``, or all) to a graph under their keys, as int8 codes (see
    ``GRAPH_DTYPE``): the stored codes as they are, float32 rows quantised a batch at a time.
    Raises :class:`Stopped` between batches once ``stopping()`` says so."""
    chosen = np.arange(len(rows)) if positions is None else positions
    for start in range(0, chosen.size, ADD_BATCH_ROWS):
        if stopping is not None and stopping():
            raise Stopped
        part = chosen[start : start + ADD_BATCH_ROWS]
        codes = rows.codes[part] if isinstance(rows, Int8Rows) else encode_int8(rows[part])[0]
        graph.add(keys[part], codes)


def chunk_keys(chunk_ids: list[str], content_hashes: list[str]) -> np.ndarray:
    """Graph keys: the stored chunk id and the hash of the text it embeds, folded into 63 bits
    (usearch reserves the all-ones key). Same key, same embedded text, so the same vector under
    one identity (the reuse by content hash relies on the same fact); a chunk re-written with other
    text under the same id gets a new key. Both ids are sha256 hex, so the keys are uniformly
    spread (a collision among a million has odds of ~3e-8, and is detected by the caller)."""
    keys: np.ndarray = (_hex64(chunk_ids) ^ _hex64(content_hashes)) & _KEY_MASK
    return keys


def _hex64(values: list[str]) -> np.ndarray:
    """The first 64 bits of hex strings, vectorised; other strings are hashed one by one."""
    if not values:
        return np.zeros(0, dtype=np.uint64)
    try:
        heads = [value[:16] for value in values]
        if all(len(head) == 16 for head in heads):
            return np.frombuffer(bytes.fromhex("".join(heads)), dtype=">u8").astype(np.uint64)
    except ValueError:
        pass
    digests = b"".join(hashlib.blake2b(v.encode(), digest_size=8).digest() for v in values)
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64)


def import_usearch() -> Any | None:
    """The usearch index module, or None (with a warning naming the install command).

    onnxruntime is imported first when it is installed: loading usearch's native library
    before onnxruntime's makes onnxruntime's import crash the process (a segmentation fault,
    seen with usearch 2.26 and onnxruntime 1.24 on Linux); in that order both load fine.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401  (load order, see above)
    try:
        from usearch import index
    except ImportError:
        log.warning(
            "usearch is not installed, so large knowledge bases use exact vector search "
            "(slower past ~20k chunks); install it with: %s",
            INSTALL_HINT,
        )
        return None
    return index


@dataclass(frozen=True, slots=True)
class SideFile:
    """Where one graph is saved: the usearch file and its metadata next to it."""

    graph: Path
    meta: Path

    @classmethod
    def at(cls, folder: Path, kb_id: int, identity_id: int) -> SideFile:
        stem = folder / f"kb{kb_id}-identity{identity_id}"
        return cls(stem.with_suffix(".usearch"), stem.with_suffix(".json"))

    def metadata(self) -> dict[str, Any]:
        return {
            "version": SIDE_FILE_VERSION,
            "dtype": GRAPH_DTYPE,
            "metric": GRAPH_METRIC,
            "connectivity": CONNECTIVITY,
        }


class GraphSlot:
    """The graph of one knowledge base and identity, kept in sync with the loaded rows.

    :meth:`sync` records the latest rows and (re)starts the one worker that applies them;
    searches take the graph's lock without waiting and answer exactly when it is busy.
    """

    def __init__(self, dim: int, side_file: SideFile | None, *, background: bool = True) -> None:
        self.dim = dim
        self.side_file = side_file
        self.background = background
        self.lock = threading.Lock()  # held for every graph search and edit
        self.graph: Any | None = None
        self.keys = np.zeros(0, dtype=np.uint64)  # sorted keys the graph holds
        self.changed_since_save = 0
        self.error: str | None = None
        self.version = 0  # bumped whenever the graph or its keys change
        self._wanted: tuple[Rows, np.ndarray, int] | None = None
        self._state = threading.Lock()
        self._running = False
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()

    def sync(self, matrix: Rows, keys: np.ndarray, generation: int) -> None:
        """Bring the graph to exactly these rows (now, or soon in the background). Daemon
        thread: a one-shot command exits without waiting for a build it does not need."""
        with self._state:
            if self._stopping:
                return
            self._wanted = (matrix, keys, generation)
            if self._running:
                return
            self._running = True
            self._idle.clear()
        if self.background:
            _BUILDS.add(self)
            threading.Thread(target=self._drain, name="lorebase-ann", daemon=True).start()
        else:
            self._drain()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the graph matches the last rows given to :meth:`sync`."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop a build in progress between two batches and wait for its thread to let go of
        the native library: a process that exits while usearch's threads work in a daemon
        thread is aborted ("terminate called without an active exception"). The graph as it
        was stays usable; later :meth:`sync` calls do nothing."""
        with self._state:
            self._stopping = True
            self._wanted = None
        return self._idle.wait(timeout)

    def _drain(self) -> None:
        if self.background:
            lower_this_thread()  # a graph build yields the processor to searches
        while True:
            with self._state:
                wanted, self._wanted = self._wanted, None
                if wanted is None:
                    self._running = False
                    self._idle.set()
                    return
            try:
                self._apply(*wanted)
            except Stopped:
                continue  # nothing is wanted any more: the loop ends
            except Exception as exc:  # a broken graph must never break search: exact answers
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "the ANN index could not be updated (%s); exact search answers",
                    type(exc).__name__,
                )

    def _apply(self, matrix: Rows, keys: np.ndarray, generation: int) -> None:
        module = import_usearch()
        if module is None:
            return
        if self.graph is None:
            self._adopt(self._load(module))
        wanted = np.sort(keys)
        if self.graph is not None:
            stale = np.setdiff1d(self.keys, wanted, assume_unique=True)
            fresh = np.setdiff1d(wanted, self.keys, assume_unique=True)
            if stale.size + fresh.size <= REBUILD_SHARE * max(1, wanted.size):
                self._edit(matrix, keys, stale, fresh)
                if self.changed_since_save >= SAVE_SHARE * wanted.size:
                    self._save(generation)
                return
        graph = new_graph(module, self.dim)
        add_rows(graph, keys, matrix, stopping=lambda: self._stopping)
        with self.lock:
            self.graph, self.keys = graph, wanted
            self.version += 1
        self.changed_since_save = wanted.size
        self._save(generation)

    def _edit(self, matrix: Rows, keys: np.ndarray, stale: np.ndarray, fresh: np.ndarray) -> None:
        if stale.size == 0 and fresh.size == 0:
            return
        rows = np.flatnonzero(np.isin(keys, fresh, assume_unique=True))
        with self.lock:
            graph = self.graph
            assert graph is not None  # _apply edits only a graph it holds
            if stale.size:
                graph.remove(stale)
            if rows.size:  # an edit is small and runs to its end: never half a key set
                add_rows(graph, keys, matrix, rows)
            self.keys = np.sort(np.concatenate([np.setdiff1d(self.keys, stale), fresh]))
            self.version += 1
        self.changed_since_save += int(stale.size + fresh.size)

    def _adopt(self, graph: Any | None) -> None:
        if graph is None:
            return
        keys = np.sort(np.asarray(graph.keys, dtype=np.uint64))
        with self.lock:
            self.graph, self.keys = graph, keys
            self.version += 1
        self.changed_since_save = 0

    def _load(self, module: Any) -> Any | None:
        """The saved graph, when there is one this version can use."""
        side = self.side_file
        if side is None or not side.graph.is_file() or not side.meta.is_file():
            return None
        try:
            meta = json.loads(side.meta.read_text(encoding="utf-8"))
            expected = {**side.metadata(), "dim": self.dim}
            if any(meta.get(name) != value for name, value in expected.items()):
                return None
            graph = module.Index.restore(str(side.graph))
        except (OSError, ValueError, RuntimeError):
            return None
        if graph is None or graph.ndim != self.dim:
            return None
        graph.expansion_search = max(EXPANSION_SEARCH, ANN_CANDIDATES)
        return graph

    def _save(self, generation: int) -> None:
        """Write the graph then its metadata, each to a temporary name first, so a reader
        never sees half a file (a crash in between leaves metadata that still matches)."""
        side = self.side_file
        if side is None or self.graph is None:
            return
        private_folder(side.graph.parent)
        temporary = side.graph.with_name(side.graph.name + f".tmp{os.getpid()}")
        with self.lock:
            self.graph.save(str(temporary))
            count = int(self.keys.size)
        narrow(temporary)  # USearch writes with the umask's mode
        os.replace(temporary, side.graph)
        meta = {**side.metadata(), "dim": self.dim, "generation": generation, "count": count}
        temporary_meta = side.meta.with_name(side.meta.name + f".tmp{os.getpid()}")
        temporary_meta.write_text(json.dumps(meta), encoding="utf-8")
        narrow(temporary_meta)
        os.replace(temporary_meta, side.meta)
        self.changed_since_save = 0


def new_graph(module: Any, dim: int) -> Any:
    return module.Index(
        ndim=dim,
        metric=GRAPH_METRIC,
        dtype=GRAPH_DTYPE,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=max(EXPANSION_SEARCH, ANN_CANDIDATES),
    )


class AnnIndex(VectorIndex):
    """Graph candidates rescored exactly, plus exact search over the rows the graph lacks.

    Built over one loaded matrix; the slot's graph may be older or newer than it. Keys the
    matrix does not have are ignored, and rows whose keys the graph lacked when this index was
    made are always scored exactly, so every answer covers every row of the matrix.
    """

    def __init__(self, matrix: Rows, keys: np.ndarray, slot: GraphSlot) -> None:
        self._exact = exact_index(matrix)
        self._slot = slot
        self._keys = keys
        self._order = np.argsort(keys, kind="stable")
        self._sorted = keys[self._order]
        self._pending_at: tuple[int, np.ndarray] = (-1, np.arange(keys.size))

    @property
    def size(self) -> int:
        return self._exact.size

    def pending(self) -> np.ndarray:
        """Rows whose keys the graph lacks (searched exactly), recomputed when the graph
        changes. A graph edited after this is read only adds candidates; rows it dropped are
        ones this (older) matrix still has, which a newer load replaces on the next search."""
        version, rows = self._pending_at
        if version != self._slot.version:
            with self._slot.lock:
                version, known = self._slot.version, self._slot.keys
            rows = np.flatnonzero(~np.isin(self._keys, known, assume_unique=True))
            self._pending_at = (version, rows)
        return rows

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        query = np.asarray(query, dtype=VECTOR_DTYPE).reshape(-1)
        pending = self.pending()
        if k <= 0 or pending.size == self.size:
            return self._exact.search(query, k, allowed)
        share = 1.0
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            share = float(np.count_nonzero(allowed)) / self.size
            if share < EXACT_FILTER_SHARE:  # few rows (or none) allowed: scored exactly
                return self._exact.search(query, k, allowed)
        slack = FILTER_SLACK if allowed is not None else 1.0
        want = min(
            self.size, math.ceil(max(k, ANN_CANDIDATES) / share * slack), MAX_FILTER_CANDIDATES
        )
        if allowed is not None and share * self.size <= EXACT_ROWS_PER_CANDIDATE * want:
            return self._exact.search(query, k, allowed)
        found = self._graph_search(query, want)
        if found is None:  # the graph is being edited, or there is none
            return self._exact.search(query, k, allowed)
        candidates = np.union1d(self._positions(found), pending)
        if allowed is not None:
            candidates = candidates[allowed[candidates]]
            if candidates.size < min(k, round(share * self.size)):
                return self._exact.search(query, k, allowed)
        positions, scores = top_k(self._exact.products(query, candidates), k)
        return candidates[positions], scores

    def _graph_search(self, query: np.ndarray, count: int) -> np.ndarray | None:
        slot = self._slot
        if not slot.lock.acquire(blocking=False):
            return None
        try:
            if slot.graph is None:
                return None
            matches = slot.graph.search(encode_int8(query)[0][0], count)
            return np.asarray(matches.keys, dtype=np.uint64)
        finally:
            slot.lock.release()

    def _positions(self, keys: np.ndarray) -> np.ndarray:
        """Matrix rows of these keys; keys this matrix does not hold are dropped."""
        if keys.size == 0 or self._sorted.size == 0:
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), self._sorted.size - 1)
        hit = self._sorted[at] == keys
        positions: np.ndarray = self._order[at[hit]].astype(np.int64)
        return positions


def build_ann_index(
    matrix: Rows, keys: np.ndarray, slot: GraphSlot, generation: int
) -> VectorIndex:
    """An :class:`AnnIndex` over these rows (``keys`` from :func:`chunk_keys`), asking the slot
    to sync its graph to them; exact when usearch is missing or two rows share a key."""
    if import_usearch() is None:
        return exact_index(matrix)
    if np.unique(keys).size != keys.size:
        log.warning("two chunks share an ANN key; exact vector search answers")
        return exact_index(matrix)
    if not isinstance(matrix, Int8Rows):
        matrix = np.ascontiguousarray(matrix, dtype=VECTOR_DTYPE)
    slot.sync(matrix, keys, generation)
    return AnnIndex(matrix, keys, slot)
