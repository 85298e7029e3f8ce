"""The token estimate: weights per script, rounding, and the prefix-sum index."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.chunk import estimate_tokens
from lorebase.chunk.tokens import (
    ASCII_WEIGHT,
    CJK_WEIGHT,
    EXTENDED_WEIGHT,
    SYMBOL_WEIGHT,
    WEIGHT_PER_TOKEN,
    TokenIndex,
    char_weight,
    token_weights,
)

MIXED = "abc XYZ 019 .,;!?\n\téàüßñαβγжщы漢字日本語かなカナ한국어ＡＢ😀🎉☀✂𠀀\u1100"


@pytest.mark.parametrize(
    ("char", "weight"),
    [
        ("a", ASCII_WEIGHT),
        (" ", ASCII_WEIGHT),
        ("\n", ASCII_WEIGHT),
        ("~", ASCII_WEIGHT),
        ("é", EXTENDED_WEIGHT),
        ("ß", EXTENDED_WEIGHT),
        ("λ", EXTENDED_WEIGHT),
        ("ж", EXTENDED_WEIGHT),
        ("\u1100", EXTENDED_WEIGHT),  # hangul jamo sit below U+2E80
        ("—", EXTENDED_WEIGHT),
        ("漢", CJK_WEIGHT),
        ("か", CJK_WEIGHT),
        ("カ", CJK_WEIGHT),
        ("한", CJK_WEIGHT),
        ("豈", CJK_WEIGHT),  # U+F900 compatibility ideograph
        ("Ａ", CJK_WEIGHT),  # full-width form
        ("\U00020000", CJK_WEIGHT),  # extension B
        ("😀", SYMBOL_WEIGHT),
        ("🎉", SYMBOL_WEIGHT),
        ("☀", SYMBOL_WEIGHT),
        ("✂", SYMBOL_WEIGHT),
        ("\U0001fb00", EXTENDED_WEIGHT),  # just past the emoji block
        ("\ue000", EXTENDED_WEIGHT),  # private use
    ],
)
def test_char_weight(char: str, weight: int) -> None:
    assert char_weight(char) == weight


def test_weights_are_quarter_tokens() -> None:
    assert WEIGHT_PER_TOKEN == 4
    assert (ASCII_WEIGHT, EXTENDED_WEIGHT, CJK_WEIGHT, SYMBOL_WEIGHT) == (1, 2, 4, 8)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("a" * 400, 100),
        ("é", 1),
        ("éé", 1),
        ("ééé", 2),
        ("漢字日本", 4),
        ("😀", 2),
        ("ab漢", 2),  # 1 + 1 + 4 = 6 units -> rounded up
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_estimate_is_deterministic_and_fast_path_agrees() -> None:
    text = "The quick brown fox. " * 50
    assert estimate_tokens(text) == -(-len(text) // WEIGHT_PER_TOKEN)
    assert estimate_tokens(text) == estimate_tokens(text)
    assert token_weights(text) == [ASCII_WEIGHT] * len(text)


def test_token_weights_per_character() -> None:
    assert token_weights("a漢😀é") == [1, 4, 8, 2]
    assert token_weights("") == []


def test_index_on_ascii_text_is_length() -> None:
    index = TokenIndex("x" * 1000)
    assert index.prefix(0) == 0
    assert index.prefix(1000) == 1000
    assert index.tokens(10, 19) == 3
    assert index.furthest_end(0, 32, 1000) == 128
    assert index.furthest_end(900, 32, 1000) == 1000


def test_furthest_end_respects_heavy_characters() -> None:
    text = "ab" + "漢" * 100
    index = TokenIndex(text)
    # 2 ASCII units + 31 ideographs = 126 units; one more would be 130 > 128.
    assert index.furthest_end(0, 32, len(text)) == 33
    assert estimate_tokens(text[:33]) == 32
    assert estimate_tokens(text[:34]) == 33


@settings(max_examples=examples(150), deadline=None)
@given(
    text=st.text(alphabet=MIXED, max_size=300),
    data=st.data(),
)
def test_index_agrees_with_estimate(text: str, data: st.DataObject) -> None:
    index = TokenIndex(text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert index.weight(start, end) == sum(token_weights(text[start:end]))
    assert index.tokens(start, end) == estimate_tokens(text[start:end])


@settings(max_examples=examples(150), deadline=None)
@given(
    text=st.text(alphabet=MIXED, max_size=300),
    max_tokens=st.integers(1, 60),
    data=st.data(),
)
def test_furthest_end_is_the_largest_fitting_end(
    text: str, max_tokens: int, data: st.DataObject
) -> None:
    index = TokenIndex(text)
    start = data.draw(st.integers(0, len(text)))
    bound = data.draw(st.integers(start, len(text)))
    end = index.furthest_end(start, max_tokens, bound)
    assert start <= end <= bound
    assert estimate_tokens(text[start:end]) <= max_tokens
    if end < bound:
        assert estimate_tokens(text[start : end + 1]) > max_tokens
