"""Retrieval metrics as small pure functions over ``(ranked ids, relevance)``.

``ranked`` is a list of document ids, best first, each at most once (see :func:`distinct`:
a document whose chunks came back three times counts once, where it first appeared).
``relevance`` maps document ids to graded judgments; a grade of at least
:data:`RELEVANT_GRADE` is relevant, a grade of 0 (or below) is judged not relevant, and
an id that is not there is unjudged (treated as not relevant).

The definitions are trec_eval's (as used by BEIR through pytrec_eval and by ir-measures), so
figures can be compared with published ones:

- ``precision@k`` divides by ``k`` even when fewer than ``k`` documents came back;
- ``nDCG@k`` uses linear gains (the grade itself) and a ``log2(rank + 1)`` discount, the ideal
  ranking being every judged document sorted by grade;
- ``MRR@k`` is the reciprocal rank of the first relevant document within the first ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from lorebase.formats import citation_locator

# The relevance floor search cuts with: one constant for search and evaluation.
from lorebase.settings import DEFAULT_NO_ANSWER_THRESHOLD as DEFAULT_NO_ANSWER_THRESHOLD

RELEVANT_GRADE = 1
"""The lowest grade that counts as relevant (trec_eval's ``rel_level``)."""

Relevance = Mapping[str, int]


def distinct(ids: Iterable[str]) -> list[str]:
    """The ids in order, each kept where it first appears."""
    return list(dict.fromkeys(ids))


def relevant(relevance: Relevance) -> set[str]:
    """The ids judged relevant."""
    return {doc for doc, grade in relevance.items() if grade >= RELEVANT_GRADE}


def recall_at_k(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    """Share of the relevant documents found in the first ``k`` (0 when none is relevant)."""
    wanted = relevant(relevance)
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def precision_at_k(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    """Relevant documents in the first ``k``, divided by ``k``."""
    wanted = relevant(relevance)
    return sum(1 for doc in ranked[:k] if doc in wanted) / k


def reciprocal_rank(ranked: Sequence[str], relevance: Relevance, k: int = 10) -> float:
    """``1 / rank`` of the first relevant document within the first ``k``, else 0."""
    wanted = relevant(relevance)
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def dcg(grades: Iterable[float]) -> float:
    """Discounted cumulative gain of grades in rank order: ``sum(g / log2(rank + 1))``."""
    return sum(grade / math.log2(rank + 1) for rank, grade in enumerate(grades, start=1))


def ndcg_at_k(ranked: Sequence[str], relevance: Relevance, k: int = 10) -> float:
    """DCG of the first ``k`` over the DCG of the ideal ranking (0 when nothing is relevant)."""
    ideal = dcg(sorted((g for g in relevance.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg(max(relevance.get(doc, 0), 0) for doc in ranked[:k]) / ideal


def mean(values: Iterable[float]) -> float | None:
    """The arithmetic mean, or None for no values."""
    items = list(values)
    return sum(items) / len(items) if items else None


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks (the
    default of numpy and of most dashboards); None for no values."""
    items = sorted(values)
    if not items:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be between 0 and 100")
    position = (len(items) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(items) - 1)
    return items[low] + (items[high] - items[low]) * (position - low)


def latency_summary(milliseconds: Sequence[float]) -> dict[str, float | None]:
    """p50, p95, max and mean of per-query latencies."""
    return {
        "p50": percentile(milliseconds, 50),
        "p95": percentile(milliseconds, 95),
        "max": max(milliseconds) if milliseconds else None,
        "mean": mean(milliseconds),
    }


def abstains(top_score: float | None, threshold: float) -> bool:
    """Whether a question is answered with "nothing found": no scored hit, or the best score
    is below ``threshold``."""
    return top_score is None or top_score < threshold


def no_answer_correct(top_score: float | None, threshold: float, answerable: bool) -> bool:
    """An unanswerable question is right when the search abstains; an answerable one when it
    does not."""
    return abstains(top_score, threshold) != answerable


def citation_complete(
    kind: str,
    path: str,
    *,
    trail: Sequence[str] = (),
    page: int | None = None,
    line: int | None = None,
) -> bool:
    """Whether a hit's citation has a path and the locator its document kind provides
    (:func:`~lorebase.formats.citation_locator`: a page for PDF, a slide or a cell, a line
    for the text family, Markdown and code, a row for spreadsheets, a heading trail for
    formats that have none of these); kinds without a locator need only the path."""
    if not path:
        return False
    locator = citation_locator(kind)
    if locator in ("page", "slide", "cell"):
        return page is not None
    if locator in ("line", "row"):
        return line is not None
    if locator == "trail":
        return bool(trail)
    return True
