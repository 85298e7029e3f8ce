"""English stop words: Lucene's default English set (the one BM25 baselines in BEIR use).

Taken as is, not tuned to any data: the keyword arm leaves these out of a query that has
other words, so "where can guests leave their car" does not rank passages by "the" and
"their"; a query made only of stop words still searches with all of them.
"""

ENGLISH_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)


def without_stop_words(terms: list[str]) -> list[str]:
    """``terms`` minus stop words (compared case-folded, punctuation stripped), unless that
    would leave nothing."""
    kept = [
        t
        for t in terms
        if "".join(c for c in t.casefold() if c.isalnum()) not in ENGLISH_STOP_WORDS
    ]
    return kept or terms
