"""The rerank policy (depth and gate): pure functions over ``(id, score)`` lists, with
hypothesis for their invariants (the relevance floor: test_floor.py)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lorebase.search.bounds import MAX_TOP_K
from lorebase.search.fusion import FUSIONS, Arms, Scored, dense_evidence
from lorebase.search.gate import (
    CLEAR_LEAD,
    GATE_MIN_CANDIDATES,
    RERANK_MAX_DEPTH,
    RERANK_MIN_DEPTH,
    clearly_ahead,
    lead,
    rerank_depth,
)


def ranking(scores: list[float], prefix: str = "c") -> Scored:
    """Ids c0, c1, ... with the scores sorted best first (as an arm returns them)."""
    return [(f"{prefix}{i}", s) for i, s in enumerate(sorted(scores, reverse=True))]


# -- depth ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("top_k", "depth"), [(1, 20), (5, 20), (7, 21), (10, 30), (16, 48), (17, 50), (100, 50)]
)
def test_the_depth_is_three_per_hit_between_20_and_50(top_k: int, depth: int) -> None:
    assert rerank_depth(top_k) == depth


@given(st.integers(1, MAX_TOP_K), st.integers(1, MAX_TOP_K))
def test_the_depth_is_bounded_and_never_shrinks_as_k_grows(a: int, b: int) -> None:
    assert RERANK_MIN_DEPTH <= rerank_depth(a) <= RERANK_MAX_DEPTH
    if a <= b:
        assert rerank_depth(a) <= rerank_depth(b)


# -- lead ---------------------------------------------------------------------------------------
def test_the_lead_is_the_first_gap_as_a_share_of_the_spread() -> None:
    assert lead(ranking([10, 5, 4, 3, 0])) == pytest.approx(0.5)
    assert lead(ranking([10, 10, 4])) == 0.0  # tied first
    assert lead(ranking([3, 3, 3])) is None  # no spread
    assert lead(ranking([9, 1])) is None  # too few to have a spread worth the name
    # Only the first ten count: a long tail does not dilute the lead.
    assert lead(ranking([10, 5, *[4.0] * 8, -100])) == pytest.approx(5 / 6)


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
scores_lists = st.lists(finite, min_size=GATE_MIN_CANDIDATES, max_size=30)


@given(scores_lists, st.floats(0.01, 100), finite)
def test_the_lead_ignores_the_arm_s_scale(scores: list[float], scale: float, shift: float) -> None:
    """BM25, cosine and any fusion's scores alike: a positive affine change leaves it."""
    before = lead(ranking(scores))
    after = lead(ranking([s * scale + shift for s in scores]))
    assume(before is not None and after is not None)
    # Rounding: shifting scores by up to 1e3 keeps ~1e-13 of them; a spread that small once
    # scaled leaves the lead to rounding, not to the rule under test.
    top = sorted(scores, reverse=True)[:10]
    assume((top[0] - top[-1]) * scale >= 1e-3)
    assert after == pytest.approx(before, abs=1e-6)


@given(scores_lists)
def test_the_lead_is_a_share(scores: list[float]) -> None:
    value = lead(ranking(scores))
    assert value is None or 0.0 <= value <= 1.0


# -- gate ---------------------------------------------------------------------------------------
def ahead(first: float, pack: list[float], prefix: str) -> Scored:
    """An arm whose first, ``top``, scores ``first`` above a pack."""
    return [("top", first), *ranking(pack, prefix)]


PACK = [0.50, 0.48, 0.47, 0.45, 0.44, 0.43, 0.42, 0.41, 0.40]


def test_the_gate_skips_when_every_arm_puts_the_first_clearly_ahead() -> None:
    keyword = ahead(30.0, [s * 20 for s in PACK], "k")  # BM25-like
    dense = ahead(0.9, PACK, "d")  # cosine-like
    assert clearly_ahead("top", {"keyword": keyword, "dense": dense})
    assert clearly_ahead("top", {"dense": dense})  # one arm (dense mode) with a clear lead


def test_the_gate_reranks_otherwise() -> None:
    clear = ahead(0.9, PACK, "d")
    close = ahead(0.52, PACK, "k")  # first, but by a hair
    assert not clearly_ahead("top", {"keyword": close, "dense": clear})
    other_first = [("k-other", 0.99), *clear]  # the keyword arm puts another chunk first
    assert not clearly_ahead("top", {"keyword": other_first, "dense": clear})
    assert not clearly_ahead("top", {"dense": clear[:2]})  # too few candidates to judge
    assert not clearly_ahead("top", {})  # no arm ran
    assert not clearly_ahead("top", {"keyword": [], "dense": []})


@given(st.lists(scores_lists, min_size=1, max_size=2), st.floats(0.0, 2.0))
def test_the_gate_follows_the_lead_in_every_arm(packs: list[list[float]], gap: float) -> None:
    """Skipped exactly when every arm's lead is at least CLEAR_LEAD (top first in each)."""
    arms = {}
    for n, pack in enumerate(packs):
        best = max(pack)
        spread = best - min(sorted(pack, reverse=True)[:9]) or 1.0
        arms[f"arm{n}"] = ahead(best + gap * spread, pack, f"a{n}-")
    leads = [lead(arm) for arm in arms.values()]
    expected = all(v is not None and v >= CLEAR_LEAD for v in leads)
    assert clearly_ahead("top", arms) == expected


@given(st.lists(finite, min_size=GATE_MIN_CANDIDATES, max_size=20), st.floats(0.0, 100.0))
def test_a_larger_lead_never_turns_a_skip_into_a_rerank(pack: list[float], more: float) -> None:
    best = max(pack) + 1.0
    arm = ahead(best, pack, "p")
    lifted = ahead(best + more, pack, "p")
    if clearly_ahead("top", {"dense": arm}):
        assert clearly_ahead("top", {"dense": lifted})


@given(scores_lists, st.sampled_from(sorted(FUSIONS)))
def test_an_even_race_is_reranked_whatever_the_fusion(scores: list[float], fusion: str) -> None:
    """Two arms that tie their first two: the gate asks the reranker, for every fusion."""
    tail = [abs(s) % 4 for s in scores]  # all below the tied first two
    keyword = [("a", 5.0), ("b", 5.0), *ranking(tail, "k")]
    dense = [("a", 0.8), ("b", 0.8), *ranking([s / 10 for s in tail], "d")]
    fused = FUSIONS[fusion](Arms(keyword, dense, dense_evidence(dict(dense))))
    assert not clearly_ahead(fused[0][0], {"keyword": keyword, "dense": dense})
