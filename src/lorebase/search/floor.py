"""The relevance floor: a passage that neither arm supports is not an answer.

**Keyword support.** A passage matching one common word of a long question is no answer to it,
so the keyword arm supports a passage when its BM25 reaches :data:`KEYWORD_SUPPORT` of the
query's *ceiling* — the most any chunk could score, every query term's idf times ``k1 + 1``
(:meth:`lorebase.store.base.LexicalIndex.keyword_ceiling`). A passage holding, once, words that
carry about a third of the question's weight (its rare words) reaches it; one that shares
only its common words does not. A term the base does not hold counts in the ceiling at the
largest idf: a question asking mostly for words the base lacks is mostly not answered by it.

A passage without a cosine — keyword mode, a document still waiting for its vectors, a base
whose model did not answer — has no meaning to be judged by, and any keyword match supports it
(judged by its keyword share alone, keyword mode lost ADI's answerable questions a fifth of
their relevant documents). So does a question in a language no model searched reads, asked of
a base that speaks it (its best keyword passage is in the question's language; the search
passes no ceiling): an English model's cosines say little of a German question, and held to
the share, hybrid lost 3.9% of XQuAD German's answerable questions. Asked of a base in another
language, such a question is held to the share: its words rarely mean there what they mean in
it.

**Dense support**: a cosine of at least the no-answer threshold of the passage's model
(:data:`~lorebase.settings.DEFAULT_NO_ANSWER_THRESHOLD` for the bundled one, the cosine off-topic
questions stay under). Every candidate of a hybrid search has a cosine (the keyword arm's are
read from the stored vectors), so either arm may carry it.

Measured on the ten dev sets with off-topic questions (each set's corpus asked the questions of
sets about other subjects; bench/README.md, "Ranking"): hybrid answers "nothing found" to
88% of them, and 0.3% of the answerable questions lose every relevant passage they had in
their first ten. Until issue 26 any passage matching one query term was support, and hybrid
never said ``no_answer`` to an off-topic question (0%).

A search left with nothing says ``no_answer``. :data:`NO_FLOOR` keeps every candidate (to
measure ranking without the floor).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lorebase.search.fusion import Scored

NO_FLOOR = float("-inf")
"""A threshold that keeps every hit, keyword ones included (to measure ranking without the
floor)."""
KEYWORD_SUPPORT = 0.15
"""The share of the query's keyword ceiling a passage's BM25 must reach to support it."""

Threshold = float | Mapping[str, float]
"""One cosine for every dense candidate, or one per candidate: bases embedded with different
models searched together, each model's candidates held to its own threshold (cosines of two
models are not on one scale)."""


def bar(threshold: Threshold, item: str) -> float:
    """The cosine ``item`` must reach (a candidate missing from a mapping never does). Pure."""
    if isinstance(threshold, Mapping):
        return threshold.get(item, float("inf"))
    return threshold


def is_floorless(threshold: Threshold) -> bool:
    """Whether ``threshold`` keeps every candidate (:data:`NO_FLOOR`)."""
    return not isinstance(threshold, Mapping) and math.isinf(threshold) and threshold < 0


def merge_dense(rankings: Sequence[tuple[Scored, float]]) -> tuple[Scored, dict[str, float]]:
    """One dense ranking from the rankings of several embedding models (each with its own
    threshold), and the threshold of each candidate. The rankings hold different chunks (a
    base is embedded by one model) and their cosines are not comparable: candidates are taken
    rank by rank — every model's first, then every model's second — and within a rank by how
    far each clears its own model's threshold. Each keeps its own cosine. Pure."""
    thresholds: dict[str, float] = {}
    keyed = []
    for group, (ranking, threshold) in enumerate(rankings):
        for rank, (item, score) in enumerate(ranking):
            if item in thresholds:
                continue
            thresholds[item] = threshold
            keyed.append(((rank, -(score - threshold), group), item, score))
    keyed.sort(key=lambda entry: entry[0])
    return [(item, score) for _, item, score in keyed], thresholds


def keyword_supports(score: float | None, ceiling: float | None) -> bool:
    """Whether a BM25 score supports its passage: at least :data:`KEYWORD_SUPPORT` of the
    query's ceiling (None: no ceiling known, any match supports). Pure."""
    if score is None:
        return False
    if ceiling is None or ceiling <= 0:
        return score > 0
    return score >= KEYWORD_SUPPORT * ceiling


def is_supported(
    keyword: float | None, ceiling: float | None, dense: float | None, threshold: float
) -> bool:
    """Whether a passage is an answer: its cosine is at least ``threshold``, or its BM25
    supports it. A passage without a cosine (keyword mode; a document still waiting for its
    vectors; a base whose model did not answer) has no meaning to be judged by: any keyword
    match supports it. Pure."""
    if dense is None:
        return keyword_supports(keyword, None)
    return dense >= threshold or keyword_supports(keyword, ceiling)


def supported(
    fused: Scored,
    keyword: Mapping[str, float],
    ceiling: float | None,
    cosines: Mapping[str, float],
    threshold: Threshold,
) -> Scored:
    """The candidates of ``fused`` either arm supports, in their order (all of them with
    :data:`NO_FLOOR`). ``keyword``: BM25 by candidate; ``cosines``: the cosine of every
    candidate that has one; ``threshold``: one cosine, or each candidate's own. Pure."""
    if is_floorless(threshold):
        return list(fused)
    if not isinstance(threshold, Mapping):  # one bar for all (told once, not per candidate)
        return [
            pair
            for pair in fused
            if is_supported(keyword.get(pair[0]), ceiling, cosines.get(pair[0]), threshold)
        ]
    return [
        pair
        for pair in fused
        if is_supported(
            keyword.get(pair[0]), ceiling, cosines.get(pair[0]), bar(threshold, pair[0])
        )
    ]
