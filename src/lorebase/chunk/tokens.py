"""A deterministic, dependency-free token estimate, and fast range queries over it.

Why an estimate: chunks must fit the embedding model's window, but running a real tokenizer on
every candidate cut would dominate indexing time. Word-piece tokenizers spend about one token
per four ASCII characters, more on accented and non-Latin letters (they split into more
pieces), about one per CJK ideograph or kana/hangul syllable, and several per emoji. Each
character gets a weight in quarter tokens; a text's estimate is its total weight divided by
:data:`WEIGHT_PER_TOKEN`, rounded up.

:class:`TokenIndex` answers "how many tokens in ``text[a:b]``" and "how far can a chunk starting
at ``a`` reach" in O(log n), so the chunker never re-measures a text it has already seen.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache
from itertools import accumulate

WEIGHT_PER_TOKEN = 4
"""Weight units in one estimated token (an ASCII character weighs one unit)."""

ASCII_WEIGHT = 1
"""ASCII letters, digits, punctuation and whitespace: about four to a token."""

EXTENDED_WEIGHT = 2
"""Other scripts below U+2E80 (accented Latin, Greek, Cyrillic, ...): about two to a token."""

CJK_WEIGHT = 4
"""CJK ideographs, kana, hangul syllables and full-width forms: about one token each."""

SYMBOL_WEIGHT = 8
"""Emoji and pictographic symbols: about two tokens each."""

# (first code point, last code point, weight), sorted and non-overlapping. Non-ASCII code points
# outside every range weigh EXTENDED_WEIGHT.
_RANGES: tuple[tuple[int, int, int], ...] = (
    (0x2600, 0x27BF, SYMBOL_WEIGHT),  # miscellaneous symbols, dingbats
    (0x2E80, 0x9FFF, CJK_WEIGHT),  # CJK radicals, kana, bopomofo, ideographs
    (0xAC00, 0xD7AF, CJK_WEIGHT),  # hangul syllables
    (0xF900, 0xFAFF, CJK_WEIGHT),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF, CJK_WEIGHT),  # half- and full-width forms
    (0x1F000, 0x1FAFF, SYMBOL_WEIGHT),  # emoji, pictographs, playing cards, ...
    (0x20000, 0x3FFFF, CJK_WEIGHT),  # supplementary ideographs (extensions B-H)
)
_RANGE_STARTS = tuple(first for first, _, _ in _RANGES)

_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


@lru_cache(maxsize=1 << 16)
def char_weight(char: str) -> int:
    """The weight of one character (cached: texts reuse a small alphabet)."""
    code = ord(char)
    if code < 0x80:
        return ASCII_WEIGHT
    slot = bisect_right(_RANGE_STARTS, code) - 1
    if slot >= 0 and code <= _RANGES[slot][1]:
        return _RANGES[slot][2]
    return EXTENDED_WEIGHT


def token_weights(text: str) -> list[int]:
    """The weight of every character of ``text``, in order."""
    if text.isascii():
        return [ASCII_WEIGHT] * len(text)
    return [char_weight(char) for char in text]


def tokens_for_weight(weight: int) -> int:
    """Estimated tokens for a total weight: divided by four, rounded up."""
    return -(-weight // WEIGHT_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """Estimated model tokens in ``text``; same text, same number, on every machine."""
    if text.isascii():
        return tokens_for_weight(len(text))
    return tokens_for_weight(sum(map(char_weight, text)))


class TokenIndex:
    """Prefix sums of character weights over one text, stored sparsely.

    Only characters heavier than ASCII are recorded (their positions and the running sum of
    their extra weight), so an English document costs almost nothing to index and a CJK one
    costs one pass. ``weight(a, b)`` is then two binary searches.
    """

    __slots__ = ("_extra", "_heavy")

    def __init__(self, text: str) -> None:
        self._heavy: list[int] = []
        self._extra: list[int] = [0]
        if text.isascii():
            return
        runs = [(run.start(), run.group()) for run in _NON_ASCII_RUN.finditer(text)]
        # One weight lookup per distinct character; the per-character work stays in C.
        extra_of = {
            char: char_weight(char) - ASCII_WEIGHT for char in set().union(*(r for _, r in runs))
        }
        extras: list[int] = []
        for start, chars in runs:
            self._heavy.extend(range(start, start + len(chars)))
            extras.extend(map(extra_of.__getitem__, chars))
        self._extra.extend(accumulate(extras))

    def prefix(self, index: int) -> int:
        """Total weight of ``text[:index]``."""
        return index + self._extra[bisect_left(self._heavy, index)]

    def weight(self, start: int, end: int) -> int:
        """Total weight of ``text[start:end]``."""
        return self.prefix(end) - self.prefix(start)

    def tokens(self, start: int, end: int) -> int:
        """``estimate_tokens(text[start:end])`` without slicing."""
        return tokens_for_weight(self.weight(start, end))

    def furthest_end(self, start: int, max_tokens: int, end_bound: int) -> int:
        """The largest ``end <= end_bound`` with ``tokens(start, end) <= max_tokens``."""
        budget = max_tokens * WEIGHT_PER_TOKEN
        base = self.prefix(start)
        if self.prefix(end_bound) - base <= budget:
            return end_bound
        fits, too_far = start, end_bound
        while too_far - fits > 1:
            middle = (fits + too_far) // 2
            if self.prefix(middle) - base <= budget:
                fits = middle
            else:
                too_far = middle
        return fits
