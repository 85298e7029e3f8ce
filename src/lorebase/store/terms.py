"""The terms of a keyword query and the fields a lexical index holds, for every backend.

User text is split into terms here, the same way whatever index answers it: split on
whitespace, terms without a letter or digit dropped, duplicates (ignoring case) dropped, stop
words left out unless nothing else remains, at most ``MAX_QUERY_TERMS``. Each backend turns
the terms into its own query syntax, escaping them (FTS5 strings, PostgreSQL tsquery lexemes).
The fields and their BM25 weights are shared too, so both backends rank alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from lorebase.stopwords import without_stop_words

LEXICAL_FIELDS = ("title", "headings", "path", "symbol", "body")

# BM25 field weights, in LEXICAL_FIELDS order. Words in a document's title, a heading or a code
# symbol say more about a chunk than the same word in its body; reasonable, not tuned.
TITLE_WEIGHT = 2.0
HEADINGS_WEIGHT = 2.0
PATH_WEIGHT = 1.0
SYMBOL_WEIGHT = 2.0
BODY_WEIGHT = 1.0
FIELD_WEIGHTS = (TITLE_WEIGHT, HEADINGS_WEIGHT, PATH_WEIGHT, SYMBOL_WEIGHT, BODY_WEIGHT)

BM25_K1 = 1.2
BM25_B = 0.75
"""The BM25 parameters SQLite's FTS5 ``bm25()`` uses (fixed there); the PostgreSQL backend
uses the same ones so the two rank alike."""

MIN_IDF = 1e-6
"""FTS5's floor for the idf of a term in more than half of the rows (every engine's)."""

MAX_QUERY_TERMS = 32
"""Terms beyond this are dropped: OR queries cost grows with every term (FACTS.md)."""

HEADINGS_SEPARATOR = " > "

# The split plan of large keyword searches (both backends: store/sqlite/fts.py says how).
ANCHOR_SHARE = 0.01
"""The anchors' summed document frequency may reach this share of the rows (10k at 1M): the
rows the split plan scores, against all rows holding any term for the plain query."""
SPLIT_FROM_ROWS = 50_000
"""Below this many indexed rows the plain OR query is fast enough: no plan, no counting."""

_DROPPED_CHARACTERS = {0: " "}
"""NUL ends a string inside FTS5's query parser ("unterminated string") and cannot be sent to
PostgreSQL in text; it becomes a space."""


def query_terms(text: str, limit: int | None = MAX_QUERY_TERMS) -> list[str]:
    """The distinct search terms of raw user text, in order, at most ``limit``.

    Split on whitespace; a term without any letter or digit cannot match a token and is
    dropped; duplicates (ignoring case) are dropped.
    """
    cleaned = "".join(ch for ch in text.translate(_DROPPED_CHARACTERS) if not is_surrogate(ch))
    terms: list[str] = []
    seen: set[str] = set()
    for term in cleaned.split():
        if not any(ch.isalnum() for ch in term):
            continue
        folded = term.casefold()
        if folded in seen:
            continue
        seen.add(folded)
        terms.append(term)
        if limit is not None and len(terms) == limit:
            break
    return terms


def search_terms(text: str) -> list[str]:
    """The terms a keyword search uses: :func:`query_terms` without stop words (unless that
    leaves nothing), at most ``MAX_QUERY_TERMS``. Stop words go *before* the cap, so a long
    question keeps its content words (the cap used to cut half of CISI's questions short)."""
    return without_stop_words(query_terms(text, limit=None))[:MAX_QUERY_TERMS]


def headings_text(trail: Sequence[str]) -> str:
    """What the headings field indexes: the trail, outermost first, joined by `` > ``."""
    return HEADINGS_SEPARATOR.join(trail)


def is_surrogate(ch: str) -> bool:
    """Lone surrogates cannot be encoded as UTF-8 (for SQLite or PostgreSQL)."""
    return "\ud800" <= ch <= "\udfff"


def bm25_idf(frequency: int, rows: int) -> float:
    """FTS5's idf of a term in ``frequency`` of ``rows`` chunks, ``ln((N - n + 0.5) / (n +
    0.5))`` floored at :data:`MIN_IDF` (every engine scores with it); ``n`` is taken within
    ``[0, N]``. Pure."""
    frequency = min(max(frequency, 0), rows)
    ratio = (rows - frequency + 0.5) / (frequency + 0.5)
    return max(math.log(ratio) if ratio > 1.0 else 0.0, MIN_IDF)


def bm25_ceiling(frequencies: Iterable[int], rows: int) -> float:
    """The most BM25 a chunk can score for a query whose terms (one entry per term, a term
    given twice counting twice) have these document frequencies among ``rows`` chunks: a term
    adds at most its idf times ``k1 + 1`` (its frequency in the chunk without bound, whatever
    the chunk's length). A term no chunk holds counts too, at the largest idf: a question
    asking mostly for words a base lacks is mostly not answered by it. 0 for no rows. Pure."""
    if rows <= 0:
        return 0.0
    return sum(bm25_idf(frequency, rows) for frequency in frequencies) * (BM25_K1 + 1)
