"""FakeEmbedder: the deterministic test double, and the base-class behaviour it exercises."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.embed.base import EmbedderIdentity, EmbedKind
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput, Unavailable


class RecordingE5(FakeEmbedder):
    """A fake whose model name selects the e5 prefixes; records what reaches embed_batch."""

    def __init__(self) -> None:
        super().__init__(batch_size=2)
        self.seen: list[tuple[EmbedKind, list[str]]] = []

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(model="intfloat/e5-small-v2", digest="fake-v1", dim=self.dim)

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        self.seen.append((kind, list(texts)))
        return super().embed_batch(texts, kind)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_same_text_same_vector_across_instances() -> None:
    texts = ["Norwich City won the match", "ÅÄÖ ünïcödé 東京"]
    first = FakeEmbedder().embed(texts)
    second = FakeEmbedder().embed(texts)
    assert np.array_equal(first, second)


def test_shape_dtype_and_unit_norm() -> None:
    vectors = FakeEmbedder(dim=32).embed(["alpha beta", "", "   ", "γάμμα", "x" * 5000])
    assert vectors.shape == (5, 32)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_texts_sharing_words_are_closer() -> None:
    emb = FakeEmbedder()
    query = emb.embed_query("reset my password")
    near, far = emb.embed_documents(
        ["how to reset a forgotten password", "the cafeteria serves lunch at noon"]
    )
    assert cosine(query, near) > cosine(query, far) + 0.2


def test_trigrams_make_word_variants_similar() -> None:
    emb = FakeEmbedder(dim=256)
    base, variant, other = emb.embed(["embedding", "embeddings", "cafeteria"])
    assert cosine(base, variant) > cosine(base, other)


def test_identity() -> None:
    identity = FakeEmbedder(dim=16).identity
    assert (identity.model, identity.digest, identity.dim, identity.transform) == (
        "fake",
        "fake-v1",
        16,
        "none",
    )


def test_empty_input_returns_empty_matrix_without_calls() -> None:
    emb = FakeEmbedder(dim=8)
    out = emb.embed([])
    assert out.shape == (0, 8)
    assert emb.calls == 0


def test_prefixes_reach_embed_batch_for_e5_models() -> None:
    emb = RecordingE5()
    emb.embed_query("where is the stadium")
    emb.embed_documents(["Carrow Road is in Norwich"])
    assert emb.seen == [
        ("query", ["query: where is the stadium"]),
        ("document", ["passage: Carrow Road is in Norwich"]),
    ]


def test_no_prefix_for_plain_models() -> None:
    emb = FakeEmbedder()
    assert np.array_equal(emb.embed_query("canary"), emb.embed_documents(["canary"])[0])


def test_calls_are_counted_per_batch() -> None:
    emb = FakeEmbedder(batch_size=3)
    emb.embed([f"text {i}" for i in range(7)])
    assert (emb.calls, emb.texts_embedded) == (3, 7)


def test_unavailable_switch_and_hook() -> None:
    emb = FakeEmbedder(unavailable=True)
    with pytest.raises(Unavailable):
        emb.embed(["anything"])
    emb.unavailable = False
    assert emb.embed(["anything"]).shape == (1, 64)

    def refuse(texts: Sequence[str], kind: EmbedKind) -> None:
        raise Unavailable("down for the test")

    with pytest.raises(Unavailable, match="down for the test"):
        FakeEmbedder(hook=refuse).embed(["anything"])


def test_bad_settings() -> None:
    with pytest.raises(InvalidInput):
        FakeEmbedder(dim=0)
    with pytest.raises(InvalidInput):
        FakeEmbedder(batch_size=0)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=12))
def test_order_preserved_across_length_sorted_batches(texts: list[str]) -> None:
    emb = FakeEmbedder(dim=16, batch_size=3)
    together = emb.embed(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(together[i], emb.embed([text])[0])
