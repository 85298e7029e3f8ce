"""A deterministic, dependency-free embedder for tests.

Texts become hashed bags of features (lower-cased words plus the character trigrams of each
word) folded into ``dim`` signed buckets. Texts that share words or word pieces get similar
vectors, so ranking tests mean something without loading a model; the same text always gets
the same vector, in every process (blake2b, never Python's salted ``hash``).

It can also play a broken model (``unavailable=True`` or a ``hook`` that raises) and counts
its work (``calls``, ``texts_embedded``) so tests can check that vectors are reused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np

from lorebase.embed.base import Embedder, EmbedderIdentity, EmbedKind, normalize
from lorebase.errors import InvalidInput, Unavailable

FAKE_MODEL = "fake"
FAKE_DIGEST = "fake-v1"
DEFAULT_DIM = 64
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
EMPTY_FEATURE = "\x00empty"  # gives texts without words a fixed unit vector
WORD_PATTERN = re.compile(r"\w+", re.UNICODE)
HASH_BYTES = 8
WORD_EDGE = "#"

Hook = Callable[[Sequence[str], EmbedKind], None]


class FakeEmbedder(Embedder):
    """Hashing-trick bag of words and trigrams; unit-length, deterministic, instant."""

    def __init__(
        self,
        dim: int = DEFAULT_DIM,
        *,
        model: str = FAKE_MODEL,
        unavailable: bool = False,
        hook: Hook | None = None,
        batch_size: int | None = None,
        languages: frozenset[str] | None = None,
    ) -> None:
        """``languages``: what it declares it reads (None: every language), to test how a
        search weighs a model that cannot read a question."""
        if dim < 1:
            raise InvalidInput("dim must be at least 1")
        self.dim = dim
        self.model = model
        self.unavailable = unavailable
        self.hook = hook
        self.languages = languages
        if batch_size is not None:
            if batch_size < 1:
                raise InvalidInput("batch_size must be at least 1")
            self.batch_size = batch_size
        self.calls = 0
        self.texts_embedded = 0
        self._buckets: dict[str, tuple[int, float]] = {}

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model=self.model, digest=FAKE_DIGEST, dim=self.dim)

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if self.unavailable:
            raise Unavailable("the fake embedder is switched to unavailable (test double)")
        if self.hook is not None:
            self.hook(texts, kind)
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in features(text):
                bucket, sign = self._bucket(feature)
                out[row, bucket] += sign * weight
        return normalize(out)

    def _bucket(self, feature: str) -> tuple[int, float]:
        """Bucket index and sign of one feature, memoised per instance."""
        found = self._buckets.get(feature)
        if found is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=HASH_BYTES).digest()
            value = int.from_bytes(digest, "little")
            found = (value >> 1) % self.dim, (1.0 if value & 1 else -1.0)
            self._buckets[feature] = found
        return found


def features(text: str) -> list[tuple[str, float]]:
    """Weighted features of a text: each lower-cased word and its character trigrams."""
    out: list[tuple[str, float]] = []
    for word in WORD_PATTERN.findall(text.lower()):
        out.append(("w:" + word, WORD_WEIGHT))
        padded = f"{WORD_EDGE}{word}{WORD_EDGE}"
        out.extend(("t:" + padded[i : i + 3], TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return out or [(EMPTY_FEATURE, WORD_WEIGHT)]
