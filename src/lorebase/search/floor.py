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


def supported(fused: Scored, arms: Mapping[str, Scored], threshold: float) -> Scored:
    """The candidates of ``fused`` that the keyword arm found or whose dense score is at least
    ``threshold``, in their order. Without a dense arm every candidate came from the keyword
    arm, so nothing is cut."""
    if "dense" not in arms:
        return list(fused)
    found = {item for item, _ in arms.get("keyword", ())}
    dense = dict(arms["dense"])
    return [
        (item, score)
        for item, score in fused
        if item in found or (item in dense and dense[item] >= threshold)
    ]
