"""The relevance floor: a hit that neither arm supports is not an answer.

The keyword arm runs an OR query, so a chunk in its list matches at least one query term: that
is support. The dense arm returns its nearest chunks whatever their score (in a small base,
every chunk), so a dense hit is support only at a cosine of at least the no-answer threshold
(:data:`~lorebase.settings.DEFAULT_NO_ANSWER_THRESHOLD`, the score off-topic questions stay
under). A fused candidate with neither is cut. Keyword mode has nothing to cut; dense mode
keeps what clears the threshold. A search left with nothing says ``no_answer``.
"""

from __future__ import annotations

from collections.abc import Mapping

from lorebase.search.fusion import Scored

NO_FLOOR = float("-inf")
"""A threshold that keeps every hit (to measure ranking without the floor)."""


def is_supported(keyword_found: bool, dense: float | None, threshold: float) -> bool:
    """Whether a hit is an answer: the keyword arm found it, or its dense score is at least
    ``threshold``."""
    return keyword_found or (dense is not None and dense >= threshold)


def supported(fused: Scored, arms: Mapping[str, Scored], threshold: float) -> Scored:
    """The candidates of ``fused`` that the keyword arm found or whose dense score is at least
    ``threshold``, in their order. Without a dense arm every candidate came from the keyword
    arm, so nothing is cut."""
    found = {item for item, _ in arms.get("keyword", ())}
    dense = dict(arms.get("dense", ()))
    return [
        (item, score)
        for item, score in fused
        if is_supported(item in found, dense.get(item), threshold)
    ]
