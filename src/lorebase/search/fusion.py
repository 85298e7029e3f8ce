"""Fusing the two arms into one ranking of passages. Pure functions, chosen by name.

**convex** (the default) is a convex combination of both arms' scores for every candidate
either arm returned, with the scores *complete*: a passage the keyword arm found and the dense
arm did not return still has a cosine (the search reads it from the stored vectors,
:meth:`lorebase.store.base.Vectors.dense_scores`), as Vespa computes every rank feature of a
hit whichever retriever matched it. Each arm is scaled by its best candidate (BM25 over the
best BM25, the cosine, floored at 0, over the best cosine of its model), the shape Bruch, Gai
and Ingber found to beat reciprocal rank fusion in and out of domain ("An Analysis of Fusion
Functions for Hybrid Retrieval", ACM TOIS 2023, their theoretical-minimum normalisation):

    score = (1 - DENSE_SHARE) * bm25 / best_bm25 + DENSE_SHARE * reading * cosine / best_cosine

``reading`` is 1 when the embedder reads the question's language and :data:`UNREAD_WEIGHT`
when it is sure the question is in another (:mod:`lorebase.languages`): an English model's
cosines over a German question are close to noise, and let in at full weight they pulled
hybrid far below keyword alone (XQuAD German .851 against keyword .928; Spanish .820 against
.955). At a tenth they only order keyword candidates that are nearly tied.

Measured on the ten dev sets (bench/README.md, "Ranking"), the one setting chosen on one half
of the questions and confirmed on the other: documents ranked by their best passage, against
plain reciprocal rank fusion of the same two arms' lists collapsed to documents (k = 60).
Completing the scores is what lifts English collections; the weight of a model that cannot
read the question is what lifts the other languages. A document's evidence is its best
passage's: summing its passages' fused scores favoured long documents (rank fusion is flat:
three middling passages outscore one first place) and lost .08-.35 nDCG@10.

**rrf** is plain reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009), k = 60,
over the two arms as they came: the textbook, kept to compare with.

Ties are broken without the ids, so two builds of the same collection (whose chunk ids differ)
fuse alike: an item's best rank in any arm first, then the arm that gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

Scored = list[tuple[str, float]]

RRF_K = 60
DENSE_SHARE = 0.6
"""The dense arm's share of a candidate's fused score (the keyword arm has the rest)."""
UNREAD_WEIGHT = 0.1
"""What a model's cosines weigh, relative to 1, when it cannot read the question."""


@dataclass(frozen=True, slots=True)
class Arms:
    """What both arms said about one search's candidates: each arm's own ranking, best first
    (BM25; cosine, merged over the embedding models searched), and the dense evidence of every
    candidate, the keyword arm's included (:func:`dense_evidence`: 0 to 1, weighted by whether
    its model reads the question)."""

    keyword: Scored = field(default_factory=list)
    dense: Scored = field(default_factory=list)
    evidence: Mapping[str, float] = field(default_factory=dict)


Fusion = Callable[[Arms], Scored]


def dense_evidence(cosines: Mapping[str, float], reading: float = 1.0) -> dict[str, float]:
    """One model's cosines scaled to [0, 1] by the best of them (a negative cosine is no
    evidence), times ``reading``. Pure."""
    best = max(cosines.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(cosines, 0.0)
    return {item: reading * (score if score > 0 else 0.0) / best for item, score in cosines.items()}


def convex(arms: Arms, share: float = DENSE_SHARE) -> Scored:
    """Every candidate of either arm by ``(1 - share) * bm25 / best_bm25 + share *
    evidence`` (see the module docstring)."""
    keyword = dict(arms.keyword)
    best = max(keyword.values(), default=0.0)
    candidates = dict.fromkeys([item for item, _ in arms.keyword])
    candidates.update(dict.fromkeys(arms.evidence))
    scores = {
        item: (1 - share) * (keyword.get(item, 0.0) / best if best > 0 else 0.0)
        + share * arms.evidence.get(item, 0.0)
        for item in candidates
    }
    # Items only (best_ranks reads no score): no pair made per candidate.
    by_evidence = sorted(arms.evidence, key=arms.evidence.__getitem__, reverse=True)
    return _ordered(scores, [[item for item, _ in arms.keyword], by_evidence])


def rrf(rankings: Sequence[Scored], k: int = RRF_K) -> Scored:
    """Reciprocal rank fusion: each ranking adds ``1 / (k + rank)`` (rank from 1)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return _ordered(scores, [[item for item, _ in ranking] for ranking in rankings])


def _rrf_arms(arms: Arms) -> Scored:
    return rrf([arms.dense, arms.keyword])


FUSIONS: dict[str, Fusion] = {"convex": convex, "rrf": _rrf_arms}
DEFAULT_FUSION = "convex"


def best_ranks(rankings: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each item's best ``(rank, arm)`` as one number, ``rank * len(rankings) + arm`` (they
    order alike; numbers the collector does not follow): its smallest rank in any ranking
    (from 1) and the index of the first ranking that gave it that rank."""
    arms = len(rankings)
    best: dict[str, int] = {}
    for arm, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            known = best.get(item)
            # An earlier ranking gave it a smaller arm; this one's later ranks are larger.
            if known is None or rank < known // arms:
                best[item] = rank * arms + arm
    return best


def _ordered(scores: dict[str, float], rankings: Sequence[Sequence[str]]) -> Scored:
    """Highest score first; ties by best rank, then by the ranking that gave it (``rankings``:
    the items of each, in order)."""
    best = best_ranks(rankings)
    if scores.keys() <= best.keys():  # every item ranked (both fusions): sorts by lookups
        ordered = sorted(scores, key=best.__getitem__)
    else:
        # As (len(scores) + 1, len(rankings)) would order: after the rank len(scores) + 1 of
        # every ranking, before the next rank.
        last = (len(scores) + 2) * len(rankings) - 0.5
        ordered = sorted(scores, key=lambda item: best.get(item, last))
    ordered.sort(key=scores.__getitem__, reverse=True)  # stable: ties keep their best rank
    return [(item, scores[item]) for item in ordered]
