"""The vector-index seam: top-k inner-product search over the rows of one float32 matrix.

A store keeps vectors as the source of truth (in SQLite: int8 codes with one scale per vector,
``dim + 4`` bytes, see :func:`encode_int8`; ranking on real MiniLM vectors is kept, see
``bench/quantize.py``) and builds an index per knowledge base and embedding identity from them,
over the decoded float32 rows. An index answers in *row positions* of the
matrix it was built from; the caller maps positions back to chunk ids. Keeping the seam that
small lets an approximate index replace :class:`ExactIndex` past a few hundred thousand rows
without the rest of the store changing: :class:`lorebase.store.ann.AnnIndex` (an HNSW graph in
a rebuildable side file, candidates rescored against the same float32 matrix), chosen by row
count where the store loads its indexes (``DenseIndexes`` in ``store/sqlite/dense.py``).
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from lorebase.errors import InvalidInput

if TYPE_CHECKING:
    from lorebase.types import Chunk, EmbedderIdentity

VECTOR_DTYPE = np.dtype("<f4")
"""Vectors are searched as little-endian float32. Exact search over an int8 matrix measured
~1.3-1.4x slower than over float32 at 100k x 384 (numpy has no int8 product that accumulates
wider without a cast; ``bench/quantize.py``), so exact indexes decode to float32."""

SUBSET_FRACTION = 0.25
"""With a filter allowing fewer than this share of rows, score only those rows (a gather is
cheaper than a full matmul); otherwise score everything and mask."""

SUBSET_BYTES = 64 << 20
"""Copies of filtered rows an exact index keeps for filters asked again (see :class:`Subsets`):
at 1M chunks of 384 int8 dimensions, a filter allowing 5% of them takes ~20 MB."""

_NO_HITS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))


class VectorIndex(ABC):
    """Top-k inner-product search over a fixed set of rows."""

    @property
    @abstractmethod
    def size(self) -> int:
        """How many rows the index holds."""

    @abstractmethod
    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` rows for ``query``: ``(positions, scores)``, best first.

        ``allowed`` is a boolean mask over the rows (None: every row). Fewer than ``k`` rows
        come back when fewer are allowed. Equal scores are ordered by position.
        """


class ExactIndex(VectorIndex):
    """Exact search: one matrix-vector product and a partial sort.

    Measured here at about 8 ms per query for 100k x 384 (see FACTS.md), which is fast enough
    until a knowledge base holds a few hundred thousand chunks.
    """

    def __init__(self, matrix: np.ndarray) -> None:
        matrix = np.ascontiguousarray(matrix, dtype=VECTOR_DTYPE)
        if matrix.ndim != 2:
            raise InvalidInput("a vector index needs a 2-d matrix (rows x dimensions)")
        self._matrix = matrix

    @property
    def size(self) -> int:
        return int(self._matrix.shape[0])

    @property
    def dim(self) -> int:
        return int(self._matrix.shape[1])

    @property
    def matrix(self) -> np.ndarray:
        """The rows searched (read-only by convention: indexes are immutable once built)."""
        return self._matrix

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        query = np.asarray(query, dtype=VECTOR_DTYPE).reshape(-1)
        if query.shape[0] != self.dim:
            raise InvalidInput(
                f"the query vector has {query.shape[0]} dimensions, the index {self.dim}"
            )
        if k <= 0 or self.size == 0:
            return _NO_HITS
        if allowed is None:
            return top_k(self.products(query), k)
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (self.size,):
            raise InvalidInput("the allowed mask must have one entry per row of the index")
        count, rows, part = self._subsets.get(allowed) or self._subsets.put(
            allowed, *self._split(allowed)
        )
        if count == 0:
            return _NO_HITS
        if rows is not None and part is not None:
            positions, scores = top_k(part.products(query), k)
            return rows[positions], scores
        scores = self.products(query)
        scores[~allowed] = -np.inf
        return top_k(scores, min(k, count))

    def _split(self, allowed: np.ndarray) -> Subset:
        """How many rows ``allowed`` keeps; when few, which and an index of only them."""
        rows = np.flatnonzero(allowed)
        if rows.size < SUBSET_FRACTION * self.size:
            return rows.size, rows, self.subset(rows)
        return rows.size, None, None

    def products(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Inner products of ``query`` (float32, checked) with every row, or these rows."""
        return inner_products(self._matrix if rows is None else self._matrix[rows], query)

    def subset(self, rows: np.ndarray) -> ExactIndex:
        """An index of these rows only (a copy: scoring it reads no other row)."""
        return ExactIndex(self._matrix[rows])

    @property
    def nbytes(self) -> int:
        return int(self._matrix.nbytes)

    @cached_property
    def _subsets(self) -> Subsets:
        return Subsets()


@dataclass(frozen=True, slots=True)
class Int8Rows:
    """Vectors as the store keeps them (:func:`encode_int8`), a quarter of float32's bytes:
    what an ANN-sized index holds in memory next to its graph, to rescore candidates and to
    answer exactly when the graph cannot (see :mod:`lorebase.store.ann`)."""

    codes: np.ndarray  # (rows, dim) int8
    scales: np.ndarray  # (rows,) float32

    @classmethod
    def of(cls, matrix: np.ndarray) -> Int8Rows:
        return cls(*encode_int8(matrix))

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.codes.shape[0]), int(self.codes.shape[1]))

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def decode(self, rows: np.ndarray | slice | None = None) -> np.ndarray:
        """These rows (all by default) as float32."""
        if rows is None:
            return decode_int8(self.codes, self.scales)
        return decode_int8(self.codes[rows], self.scales[rows])

    def products(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Inner products with the decoded rows, without decoding them: numpy casts the codes
        to float32 in small buffers inside ``einsum`` (one thread, see :func:`inner_products`)
        and the scales are applied to the sums."""
        codes = self.codes if rows is None else self.codes[rows]
        scales = self.scales if rows is None else self.scales[rows]
        sums: np.ndarray = np.einsum("ij,j->i", codes, query, dtype=np.float32)
        sums *= scales
        return sums


class Int8ExactIndex(ExactIndex):
    """Exact search over :class:`Int8Rows`: the same answers as :class:`ExactIndex` over the
    decoded rows, ~1.3x slower, in a quarter of the memory."""

    def __init__(self, rows: Int8Rows) -> None:
        if rows.codes.ndim != 2:
            raise InvalidInput("a vector index needs a 2-d matrix (rows x dimensions)")
        self._rows = rows
        self._matrix = rows.codes  # for size and dim only

    @property
    def matrix(self) -> np.ndarray:
        return self._rows.decode()

    def products(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        return self._rows.products(query, rows)

    def subset(self, rows: np.ndarray) -> ExactIndex:
        return Int8ExactIndex(Int8Rows(self._rows.codes[rows], self._rows.scales[rows]))

    @property
    def nbytes(self) -> int:
        return int(self._rows.codes.nbytes + self._rows.scales.nbytes)


Subset = tuple[int, "np.ndarray | None", "ExactIndex | None"]
"""How many rows a mask allows; when few, which rows, and an index of only them."""


class Subsets:
    """What an exact index found of the last few filter masks it saw (:data:`Subset`): a
    filter repeated (the store keeps each filter's mask, see
    :class:`lorebase.store.sqlite.dense.LoadedIndex`) neither finds its rows again nor copies
    them (at 1M chunks the copy took as long as the products). Masks are known by identity and
    held weakly: the entry of a mask made for one search goes at the next insertion once the
    mask is dropped. At most :data:`SUBSET_BYTES` of copies are kept (thread-safe: searches
    run at once)."""

    def __init__(self, budget: int = SUBSET_BYTES) -> None:
        self._budget = budget
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, tuple[weakref.ref[np.ndarray], Subset]] = OrderedDict()

    def get(self, mask: np.ndarray) -> Subset | None:
        with self._lock:
            kept = self._kept.get(id(mask))
            if kept is None or kept[0]() is not mask:
                return None
            self._kept.move_to_end(id(mask))
            return kept[1]

    def put(
        self, mask: np.ndarray, count: int, rows: np.ndarray | None, part: ExactIndex | None
    ) -> Subset:
        subset = (count, rows, part)
        with self._lock:
            for key in [key for key, (ref, _) in self._kept.items() if ref() is None]:
                del self._kept[key]
            if _bytes(subset) <= self._budget:
                self._kept[id(mask)] = (weakref.ref(mask), subset)
            while sum(_bytes(kept) for _, kept in self._kept.values()) > self._budget:
                self._kept.popitem(last=False)
        return subset


def _bytes(subset: Subset) -> int:
    _, rows, part = subset
    return (0 if rows is None else int(rows.nbytes)) + (0 if part is None else part.nbytes)


def inner_products(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` on the calling thread only.

    ``@`` goes to OpenBLAS, which splits any matrix-vector product over ~9k values across all
    cores. On 2 shared cores the helper thread is often not scheduled in time: measured under
    load, 5k x 384 took 24 ms (p95 46 ms, 8 ms of CPU spinning) through ``@`` against 0.4 ms
    through ``einsum`` (numpy's own SIMD loop, one thread); at 100k both took ~45 ms wall, with
    10 ms of CPU for ``einsum`` against 16 ms. The product is bound by memory bandwidth, so a
    second thread buys little even on an idle machine, and costs tail latency on a busy one.
    """
    products: np.ndarray = np.einsum("ij,j->i", matrix, query)
    return products


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and values of the ``k`` highest scores, best first, ties by position.

    ``argpartition`` finds the k best in linear time; only those are sorted. Rows tied with the
    k-th score are all taken into the sort so the lowest positions win deterministically.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return _NO_HITS
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    values = scores[candidates]
    order = np.lexsort((candidates, -values))[:k]
    return candidates[order].astype(np.int64), values[order].astype(np.float32)


def build_index(matrix: np.ndarray) -> VectorIndex:
    """The exact index for a matrix of vectors: the default below ``ANN_THRESHOLD`` rows
    (:mod:`lorebase.store.ann`), where exact search is fast and loses nothing."""
    return ExactIndex(matrix)


INT8_MAX = 127
"""Codes run from -127 to 127 (symmetric: -128 is never used, so negation is exact)."""


def encode_int8(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scalar quantisation with one scale per vector: ``codes = round(x * 127 / max|x|)`` (the
    full code range for every vector), and ``scale = ||x|| / ||codes||`` so that the decoded
    vector ``codes * scale`` has the length of the original: a unit vector decodes to a unit
    vector, and an inner product with it stays a cosine. Encoding a decoded vector gives the
    same codes back (and the scale to within float rounding), so a vector reused many times
    does not drift.
    Returns ``(codes int8 (n, dim), scales float32 (n,))``; a zero vector gets scale 0."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    peak = np.abs(matrix).max(axis=1, initial=0.0)
    step = np.divide(INT8_MAX, peak, out=np.zeros_like(peak), where=peak > 0)
    codes = np.clip(np.rint(matrix * step[:, None]), -INT8_MAX, INT8_MAX).astype(np.int8)
    code_norms = np.linalg.norm(codes.astype(np.float32), axis=1)
    norms = np.linalg.norm(matrix, axis=1)
    scales = np.divide(norms, code_norms, out=np.zeros_like(norms), where=code_norms > 0)
    return codes, scales.astype(np.float32)


def decode_int8(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Quantised vectors back as float32 rows (see :func:`encode_int8`)."""
    out: np.ndarray = codes.astype(np.float32)
    out *= np.asarray(scales, dtype=np.float32).reshape(-1, 1)
    return out


def blob_dtype(dim: int) -> np.dtype:
    """A stored vector's layout: its scale (little-endian float32), then ``dim`` int8 codes
    (see :func:`encode_int8`): ``dim + 4`` bytes, a quarter of float32's ``4 * dim``."""
    return np.dtype([("scale", "<f4"), ("codes", "i1", (dim,))])


def blob_bytes(dim: int) -> int:
    """Bytes of one stored vector of ``dim`` dimensions."""
    return dim + 4


def to_blobs(matrix: np.ndarray) -> list[bytes]:
    """Vectors (rows) as the bytes the store keeps, one blob per row."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    codes, scales = encode_int8(matrix)
    records = np.empty(matrix.shape[0], dtype=blob_dtype(matrix.shape[1]))
    records["scale"], records["codes"] = scales, codes
    raw = records.tobytes()
    size = records.dtype.itemsize
    return [raw[i * size : (i + 1) * size] for i in range(matrix.shape[0])]


def to_blob(vector: np.ndarray) -> bytes:
    """One vector as the bytes the store keeps."""
    return to_blobs(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]


def from_blob(blob: bytes, dim: int) -> np.ndarray:
    """A stored vector back as a (writable) float32 array."""
    vector: np.ndarray = matrix_from_blobs([blob], dim)[0]
    return vector


def records_from_blobs(blobs: list[bytes], dim: int) -> np.ndarray:
    """Stored vectors as a structured array (``scale``, ``codes``) over their joined bytes,
    without a Python loop over values; ``InvalidInput`` when one does not fit ``dim``."""
    joined = b"".join(blobs)
    layout = blob_dtype(dim)
    if len(joined) != len(blobs) * layout.itemsize:
        raise InvalidInput(f"stored vectors do not all have {dim} dimensions")
    return np.frombuffer(joined, dtype=layout)


def matrix_from_blobs(blobs: list[bytes], dim: int, out: np.ndarray | None = None) -> np.ndarray:
    """Many stored vectors as one ``(len(blobs), dim)`` float32 matrix, decoded straight into
    ``out`` when given (no float32 temporary the size of the batch)."""
    if out is None:
        out = np.empty((len(blobs), dim), dtype=np.float32)
    if not blobs:
        return out
    records = records_from_blobs(blobs, dim)
    np.multiply(records["codes"], records["scale"][:, None], out=out, dtype=np.float32)
    return out


def checked_vectors(
    chunks: Sequence[Chunk], vectors: np.ndarray | None, identity: EmbedderIdentity | None
) -> np.ndarray | None:
    """The vectors as a float32 matrix, after checking they fit the chunks and identity."""
    if vectors is None:
        return None
    if identity is None:
        raise InvalidInput("vectors need the identity of the embedder that made them")
    matrix = np.asarray(vectors, dtype=np.float32)
    expected = (len(chunks), identity.dim)
    if matrix.shape != expected:
        raise InvalidInput(
            f"vectors have shape {matrix.shape}, expected {expected}: one row of "
            f"{identity.dim} values per chunk"
        )
    if not np.isfinite(matrix).all():
        raise InvalidInput("vectors hold NaN or infinite values; check the embedder")
    return matrix


def checked_query(vector: np.ndarray, identity: EmbedderIdentity) -> np.ndarray:
    """A query vector as every backend searches with it: float32, flat, of the identity's
    dimension and finite (``InvalidInput`` otherwise)."""
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != identity.dim:
        raise InvalidInput(
            f"the query vector has {query.shape[0]} dimensions; {identity.key} has {identity.dim}"
        )
    if not np.isfinite(query).all():
        raise InvalidInput("the query vector holds NaN or infinite values")
    return query
