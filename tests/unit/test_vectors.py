"""The vector-index seam: exact top-k inner product, masks, ties, and the stored form (int8 with
a scale per vector) and its round-trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.errors import InvalidInput
from lorebase.store.vectors import (
    ExactIndex,
    blob_bytes,
    build_index,
    decode_int8,
    encode_int8,
    from_blob,
    matrix_from_blobs,
    to_blob,
    to_blobs,
    top_k,
)

DIM = 16


def unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def test_a_stored_vector_is_its_own_top_hit() -> None:
    matrix = unit_rows(200)
    index = ExactIndex(matrix)
    for row in (0, 57, 199):
        positions, scores = index.search(matrix[row], 5)
        assert positions[0] == row
        assert scores[0] == pytest.approx(1.0, abs=1e-5)
        assert list(scores) == sorted(scores, reverse=True)


def test_k_larger_than_the_index_returns_every_row() -> None:
    matrix = unit_rows(7)
    positions, scores = ExactIndex(matrix).search(matrix[3], 100)
    assert sorted(positions.tolist()) == list(range(7))
    assert len(scores) == 7


@pytest.mark.parametrize("k", [0, -3])
def test_non_positive_k_returns_nothing(k: int) -> None:
    positions, scores = ExactIndex(unit_rows(5)).search(unit_rows(1)[0], k)
    assert positions.size == 0 and scores.size == 0


def test_empty_index_returns_nothing() -> None:
    index = ExactIndex(np.zeros((0, DIM), dtype=np.float32))
    assert index.size == 0
    assert index.search(unit_rows(1)[0], 3)[0].size == 0


@pytest.mark.parametrize("allowed_share", [0.05, 0.9])  # both the gather and the mask path
def test_allowed_mask_limits_the_rows(allowed_share: float) -> None:
    matrix = unit_rows(400)
    rng = np.random.default_rng(1)
    allowed = rng.random(400) < allowed_share
    query = unit_rows(1, seed=9)[0]
    positions, scores = ExactIndex(matrix).search(query, 10, allowed)
    assert allowed[positions].all()
    expected = np.flatnonzero(allowed)[np.argsort(-(matrix[allowed] @ query), kind="stable")]
    assert positions.tolist() == expected[:10].tolist()
    np.testing.assert_allclose(scores, (matrix @ query)[positions], rtol=1e-5)


def test_allowed_mask_with_fewer_rows_than_k() -> None:
    matrix = unit_rows(50)
    allowed = np.zeros(50, dtype=bool)
    allowed[[4, 40]] = True
    positions, _ = ExactIndex(matrix).search(matrix[0], 10, allowed)
    assert sorted(positions.tolist()) == [4, 40]


def test_allowed_mask_with_no_rows() -> None:
    positions, _ = ExactIndex(unit_rows(10)).search(unit_rows(1)[0], 3, np.zeros(10, bool))
    assert positions.size == 0


def test_ties_are_ordered_by_position() -> None:
    matrix = np.tile(np.eye(4, dtype=np.float32)[0], (6, 1))  # six identical rows
    matrix[2] = np.eye(4, dtype=np.float32)[1]  # one row worse
    positions, scores = ExactIndex(matrix).search(np.eye(4, dtype=np.float32)[0], 3)
    assert positions.tolist() == [0, 1, 3]
    assert scores.tolist() == [1.0, 1.0, 1.0]


def test_dimension_and_mask_mismatches_raise() -> None:
    index = ExactIndex(unit_rows(5))
    with pytest.raises(InvalidInput):
        index.search(np.ones(DIM + 1, dtype=np.float32), 1)
    with pytest.raises(InvalidInput):
        index.search(unit_rows(1)[0], 1, np.ones(4, dtype=bool))
    with pytest.raises(InvalidInput):
        ExactIndex(np.ones(5, dtype=np.float32))


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(st.integers(-3, 3), min_size=1, max_size=40),
    st.integers(1, 45),
)
def test_top_k_matches_a_full_stable_sort(values: list[int], k: int) -> None:
    scores = np.asarray(values, dtype=np.float32)
    positions, top = top_k(scores, k)
    expected = np.lexsort((np.arange(len(values)), -scores))[:k]
    assert positions.tolist() == expected.tolist()
    assert top.tolist() == scores[expected].tolist()


def test_blob_is_a_scale_then_int8_codes() -> None:
    vector = np.asarray([0.6, -0.8, 0.0], dtype=np.float64)
    blob = to_blob(vector)
    assert len(blob) == blob_bytes(3) == 7
    codes = np.frombuffer(blob[4:], dtype=np.int8)
    assert codes.tolist() == [95, -127, 0]  # the largest component takes the full range
    restored = from_blob(blob, 3)
    assert restored.dtype == np.float32 and restored.flags.writeable
    np.testing.assert_allclose(restored, vector, atol=0.8 / 127)
    assert float(np.linalg.norm(restored)) == pytest.approx(1.0, abs=1e-6)  # length kept
    assert from_blob(to_blob(np.zeros(3)), 3).tolist() == [0.0, 0.0, 0.0]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=1, max_size=64).filter(
        lambda values: max(map(abs, values)) > 1e-6
    )
)
def test_int8_keeps_length_and_direction_and_is_stable(values: list[float]) -> None:
    vector = np.asarray(values, dtype=np.float32)
    decoded = from_blob(to_blob(vector), vector.size)
    norm = float(np.linalg.norm(vector))
    assert float(np.linalg.norm(decoded)) == pytest.approx(norm, rel=1e-5)
    cosine = float(decoded @ vector) / (norm * float(np.linalg.norm(decoded)))
    assert cosine > 0.995
    # Stored again as it was read (a reused vector): the same codes, the same scale to within
    # float rounding, so reuse never drifts.
    again, first = to_blob(decoded), to_blob(vector)
    assert again[4:] == first[4:]
    assert np.frombuffer(again[:4], "<f4")[0] == pytest.approx(
        np.frombuffer(first[:4], "<f4")[0], rel=1e-6
    )


def test_encode_int8_rows() -> None:
    matrix = unit_rows(50, dim=384)
    codes, scales = encode_int8(matrix)
    assert codes.dtype == np.int8 and scales.dtype == np.float32
    assert (np.abs(codes).max(axis=1) == 127).all()
    decoded = decode_int8(codes, scales)
    assert np.abs((decoded * matrix).sum(axis=1) - 1).max() < 1e-3


def test_matrix_from_blobs() -> None:
    matrix = unit_rows(5, dim=3)
    restored = matrix_from_blobs(to_blobs(matrix), 3)
    np.testing.assert_allclose(restored, matrix, atol=1 / 127)
    assert matrix_from_blobs([], 3).shape == (0, 3)
    with pytest.raises(InvalidInput):
        matrix_from_blobs([to_blob(matrix[0]), b"\x00" * 4], 3)


def test_build_index_answers_like_exact() -> None:
    matrix = unit_rows(30)
    index = build_index(matrix)
    assert index.size == 30
    assert index.search(matrix[11], 1)[0].tolist() == [11]
