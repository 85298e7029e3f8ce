"""The ``Embedder`` seam: texts to L2-normalised float32 vectors.

An implementation writes one method, :meth:`Embedder.embed_batch`. The base class does the
rest: query/document prefixes (one table, by model; an embedder configured with its own
overrides :meth:`Embedder.prefix`), length-sorted batching, dtype and shape
checks, and the convenience calls ``embed_query`` / ``embed_documents``.

Every embedder has an :class:`EmbedderIdentity`. Vectors are only ever compared within one
identity; changing it (another model, other weights, another transform) makes stored
vectors stale.
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from lorebase.errors import Unavailable
from lorebase.types import EmbedderIdentity as EmbedderIdentity

EmbedKind = Literal["query", "document"]

# Prefixes some models were trained with, keyed by a substring of the model name. MiniLM needs
# none. The first matching key wins.
PREFIXES: dict[str, dict[EmbedKind, str]] = {
    "nomic-embed": {"query": "search_query: ", "document": "search_document: "},
    "e5": {"query": "query: ", "document": "passage: "},
    "bge-": {"query": "Represent this sentence for searching relevant passages: ", "document": ""},
}
DEFAULT_BATCH_SIZE = 32


def prefix_for(model: str, kind: EmbedKind) -> str:
    name = model.lower()
    for key, prefixes in PREFIXES.items():
        if key in name:
            return prefixes[kind]
    return ""


def file_digest(path: str, chunk_size: int = 1 << 20) -> str:
    """sha256 of a weights file, read in pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of ``identity.dim`` dimensions."""

    batch_size: int = DEFAULT_BATCH_SIZE
    # Whether the model answers over the network (a search holds it to a deadline).
    remote: bool = False
    # The languages the model reads (ISO 639 codes); None: every language. A question in
    # another language weighs little in its search (lorebase.languages, search/fusion.py).
    languages: frozenset[str] | None = None

    @property
    @abstractmethod
    def identity(self) -> EmbedderIdentity: ...

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """Embed one batch (texts already prefixed). Returns ``(len(texts), dim)`` float32.

        Raise :class:`lorebase.errors.Unavailable` when the model cannot answer.
        """

    def observe_batches(self, observer: Callable[[EmbedKind, float], None]) -> None:
        """Call ``observer(kind, seconds)`` after every batch (metrics: the embedder's own
        latency, apart from the rest of a pass)."""
        self.__dict__.setdefault("_batch_observers", []).append(observer)

    def prefix(self, kind: EmbedKind) -> str:
        """What goes before a text of this kind (the table of known models by default)."""
        return prefix_for(self.identity.model, kind)

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> np.ndarray:
        """Embed any number of texts: prefixed, sorted by length into batches (so padding is
        short), returned in input order, L2-normalised."""
        dim = self.identity.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        prefix = self.prefix(kind)
        prepared = [prefix + text for text in texts]
        order = sorted(range(len(prepared)), key=lambda i: len(prepared[i]))
        out = np.empty((len(prepared), dim), dtype=np.float32)
        observers: list[Callable[[EmbedKind, float], None]] = self.__dict__.get(
            "_batch_observers", []
        )
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            started = time.perf_counter()
            vectors = np.asarray(self.embed_batch([prepared[i] for i in batch], kind))
            for observer in observers:
                observer(kind, time.perf_counter() - started)
            if vectors.shape != (len(batch), dim):
                raise Unavailable(
                    f"the embedder returned vectors of shape {vectors.shape}, "
                    f"expected {(len(batch), dim)}; check the model configuration"
                )
            out[batch] = vectors
        return normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text], "query")[0]
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts, "document")


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = vectors / norms
    return unit
