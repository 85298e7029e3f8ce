"""How the bundled embedder cuts a batch into ONNX calls (no model needed): every text in
exactly one call, sorted by length, each call within the token budget (issue 15: the peak
memory follows rows × padded length of the largest call)."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.embed.onnx import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_MAX_TOKENS_PER_CALL,
    OnnxEmbedder,
    token_budget_groups,
)
from lorebase.errors import InvalidInput

lengths_lists = st.lists(st.integers(min_value=2, max_value=DEFAULT_MAX_LENGTH), max_size=80)


@given(lengths=lengths_lists, budget=st.integers(min_value=DEFAULT_MAX_LENGTH, max_value=9000))
def test_groups_partition_and_fit_the_budget(lengths: list[int], budget: int) -> None:
    groups = token_budget_groups(lengths, budget)
    flat = [i for group in groups for i in group]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)  # short padding: sorted throughout
    for group in groups:
        assert group
        assert len(group) * max(lengths[i] for i in group) <= budget


@given(lengths=lengths_lists, budget=st.integers(min_value=DEFAULT_MAX_LENGTH, max_value=9000))
def test_groups_are_full(lengths: list[int], budget: int) -> None:
    """A group ends only when the next text would not fit: no needless extra calls."""
    groups = token_budget_groups(lengths, budget)
    for group, following in pairwise(groups):
        assert (len(group) + 1) * lengths[following[0]] > budget


def test_whole_batches_of_short_texts_stay_one_call() -> None:
    assert token_budget_groups([20] * 32, DEFAULT_MAX_TOKENS_PER_CALL) == [list(range(32))]
    full = token_budget_groups([DEFAULT_MAX_LENGTH] * 32, DEFAULT_MAX_TOKENS_PER_CALL)
    per_call = DEFAULT_MAX_TOKENS_PER_CALL // DEFAULT_MAX_LENGTH
    assert [len(g) for g in full] == [per_call] * (32 // per_call)


def test_a_text_over_the_budget_runs_alone() -> None:
    assert token_budget_groups([5, 300, 300], 256) == [[0], [1], [2]]
    assert token_budget_groups([], 256) == []


def test_budget_below_max_length_is_refused() -> None:
    with pytest.raises(InvalidInput, match="max_tokens_per_call"):
        OnnxEmbedder(max_tokens_per_call=DEFAULT_MAX_LENGTH - 1)
    OnnxEmbedder(max_tokens_per_call=DEFAULT_MAX_LENGTH)  # lazy: nothing loads
