"""The rerank policy: how deep the reranker reads, and when it is not asked at all. Pure
functions over the arms' ``(id, score)`` lists.

**Depth.** The reranker reads ``max(20, 3 * top_k)`` of the best fused candidates, at most 50:
three candidates per hit shown leave it room to lift a passage both arms ranked middling; at
least 20 so a short answer list still gets a real choice; at most 50 (each arm's own candidate
count) for a cross-encoder's cost per passage.

**Gate.** The reranker is skipped when the fused first hit is already clearly ahead: every arm
that ran ranks it first, each by a clear lead (:func:`lead` at least :data:`CLEAR_LEAD`).

Why the arms' scores and not the fused ones: a fused score is no measure of a margin.
Reciprocal rank fusion is a function of ranks only, so its first and second differ by about
``1/k**2`` whatever the evidence, and relative-score fusion rescales each arm by its own
min and max; a margin on either would mean something different for each fusion (and change
with the next one). Each arm's own scores are the evidence. A lead measured inside one arm's
list, as a share of that list's spread, is free of the arm's scale (BM25 is unbounded,
cosine is not) and of the fusion. When every arm that ran puts the same passage first, each
setting it apart from the pack, the signals a cross-encoder would overrule agree, and its
cost buys little. One arm alone (keyword or dense mode) must still show the clear lead.

Why a half: ``lead >= 1/2`` means the gap from the first to the second is at least the gap
from the second to the tenth — the first stands further from the pack than the pack spans.
A rule about the shape of a list, not a figure fitted to a question set.
"""

from __future__ import annotations

from collections.abc import Mapping

from lorebase.search.fusion import Scored

RERANK_MIN_DEPTH = 20
RERANK_PER_RESULT = 3
RERANK_MAX_DEPTH = 50
# The lead is measured against the spread of this many of an arm's first candidates.
GATE_WINDOW = 10
# Fewer candidates than this in an arm: no spread worth the name (with two, any lead is 1).
GATE_MIN_CANDIDATES = 3
CLEAR_LEAD = 0.5


def rerank_depth(top_k: int) -> int:
    """How many of the best fused candidates the reranker reads for ``top_k`` hits."""
    return min(RERANK_MAX_DEPTH, max(RERANK_MIN_DEPTH, RERANK_PER_RESULT * top_k))


def lead(ranking: Scored, window: int = GATE_WINDOW) -> float | None:
    """How far an arm's first candidate is ahead of its second, as a share of the spread of
    its first ``window``: ``(s1 - s2) / (s1 - s_n)``, from 0 (tied) to 1. None when the arm
    has fewer than :data:`GATE_MIN_CANDIDATES` candidates or no spread at all."""
    scores = [score for _, score in ranking[:window]]
    if len(scores) < GATE_MIN_CANDIDATES:
        return None
    spread = scores[0] - scores[-1]
    if not spread > 0:
        return None
    return max(0.0, (scores[0] - scores[1]) / spread)


def clearly_ahead(top: str, arms: Mapping[str, Scored]) -> bool:
    """Whether ``top`` (the fused first) is every arm's first by a clear lead (see the module
    docstring); False when no arm ran."""
    ran = [ranking for ranking in arms.values() if ranking]
    if not ran:
        return False
    for ranking in ran:
        if ranking[0][0] != top:
            return False
        margin = lead(ranking)
        if margin is None or margin < CLEAR_LEAD:
            return False
    return True
