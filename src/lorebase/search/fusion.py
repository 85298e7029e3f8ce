"""Fusing ranked lists. Pure functions over ``(id, score)`` lists, chosen by name.

RRF is plain reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) with the
constant everyone uses (LanceDB, Elasticsearch, OpenSearch), k = 60. Until issue 16 a chunk
found by more arms always went first (a "consensus" key). Up to 61 candidates an arm plain
RRF orders so anyway (two ranks of at most 61 beat any single rank: 2/121 > 1/61); deeper
lists (``top_k`` above 20) it changed by the third decimal at most on the IR sets
(bench/README.md), so the order is now the score's alone. What broke small bases was the
dense arm's evidence, not the key: see :mod:`lorebase.search.service`.

Ties are broken without the ids, so two builds of the same collection (whose chunk ids differ)
fuse alike: an item's best rank in any arm first, then the arm that gave it (an earlier
ranking wins). Two items never tie on both, since an arm gives each rank once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Scored = list[tuple[str, float]]
Fusion = Callable[[Sequence[Scored]], Scored]

RRF_K = 60


def rrf(rankings: Sequence[Scored], k: int = RRF_K) -> Scored:
    """Reciprocal rank fusion: each arm adds ``1 / (k + rank)`` (rank from 1)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return _ordered(scores, rankings)


def relative_score(rankings: Sequence[Scored]) -> Scored:
    """Score-aware fusion: each arm's scores min-max scaled to [0, 1], then summed.

    Keeps how far apart the candidates were within an arm, which rank fusion throws away.
    An arm whose scores are all equal gives each of its candidates 1.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        if not ranking:
            continue
        values = [score for _, score in ranking]
        low, high = min(values), max(values)
        span = high - low
        for item, score in ranking:
            scaled = (score - low) / span if span > 0 else 1.0
            scores[item] = scores.get(item, 0.0) + scaled
    return _ordered(scores, rankings)


FUSIONS: dict[str, Fusion] = {"rrf": rrf, "relative": relative_score}


def best_ranks(rankings: Sequence[Scored]) -> dict[str, tuple[int, int]]:
    """Each item's best ``(rank, arm)``: its smallest rank in any arm (from 1) and the index
    of the first arm that gave it that rank."""
    best: dict[str, tuple[int, int]] = {}
    for arm, ranking in enumerate(rankings):
        for rank, (item, _) in enumerate(ranking, start=1):
            if item not in best or (rank, arm) < best[item]:
                best[item] = (rank, arm)
    return best


def _ordered(scores: dict[str, float], rankings: Sequence[Scored]) -> Scored:
    """Highest score first; ties by best rank, then by the arm that gave it."""
    best = best_ranks(rankings)
    ordered = sorted(scores, key=lambda item: (-scores[item], best[item]))
    return [(item, scores[item]) for item in ordered]
