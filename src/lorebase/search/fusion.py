"""Fusing ranked lists. Pure functions over ``(id, score)`` lists, chosen by name.

Both fusions put a chunk that several arms found above one that fewer arms found (consensus
first), then order by their own score. With the default 50 candidates an arm, plain RRF with
k = 60 already does that (two ranks of at most 50 beat one rank 1: 2/110 > 1/61); the explicit
first key keeps it true for deeper candidate lists too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Scored = list[tuple[str, float]]
Fusion = Callable[[Sequence[Scored]], Scored]

RRF_K = 60


def rrf(rankings: Sequence[Scored], k: int = RRF_K) -> Scored:
    """Reciprocal rank fusion: each arm adds ``1 / (k + rank)`` (rank from 1)."""
    scores: dict[str, float] = {}
    arms: dict[str, int] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            arms[item] = arms.get(item, 0) + 1
    return _consensus_order(scores, arms)


def relative_score(rankings: Sequence[Scored]) -> Scored:
    """Score-aware fusion: each arm's scores min-max scaled to [0, 1], then summed.

    Keeps how far apart the candidates were within an arm, which rank fusion throws away.
    An arm whose scores are all equal gives each of its candidates 1.
    """
    scores: dict[str, float] = {}
    arms: dict[str, int] = {}
    for ranking in rankings:
        if not ranking:
            continue
        values = [score for _, score in ranking]
        low, high = min(values), max(values)
        span = high - low
        for item, score in ranking:
            scaled = (score - low) / span if span > 0 else 1.0
            scores[item] = scores.get(item, 0.0) + scaled
            arms[item] = arms.get(item, 0) + 1
    return _consensus_order(scores, arms)


FUSIONS: dict[str, Fusion] = {"rrf": rrf, "relative": relative_score}


def _consensus_order(scores: dict[str, float], arms: dict[str, int]) -> Scored:
    """Most arms first, then highest score, then id (so ties are deterministic)."""
    ordered = sorted(scores, key=lambda item: (-arms[item], -scores[item], item))
    return [(item, scores[item]) for item in ordered]
