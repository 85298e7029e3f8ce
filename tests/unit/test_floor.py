"""The relevance floor: a passage neither arm supports is not an answer. Pure functions, with
hypothesis for their invariants."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.floor import (
    KEYWORD_SUPPORT,
    NO_FLOOR,
    is_supported,
    keyword_supports,
    supported,
)
from lorebase.search.fusion import Arms, Scored, convex, dense_evidence
from lorebase.store.terms import BM25_K1, bm25_ceiling, bm25_idf

THRESHOLD = 0.35

ids = st.lists(st.sampled_from([f"c{i}" for i in range(30)]), unique=True, max_size=20)
cosine = st.floats(-1.0, 1.0, allow_nan=False)


@st.composite
def candidates(draw: st.DrawFn) -> tuple[Scored, dict[str, float], dict[str, float]]:
    """A fused order and, per candidate, maybe a BM25 score and maybe a cosine."""
    items = draw(ids)
    keyword = {i: draw(st.floats(0.01, 50)) for i in items if draw(st.booleans())}
    cosines = {i: draw(cosine) for i in items if draw(st.booleans())}
    fused = [(item, float(len(items) - rank)) for rank, item in enumerate(items)]
    return fused, keyword, cosines


def test_keyword_support_is_a_share_of_the_ceiling() -> None:
    assert keyword_supports(KEYWORD_SUPPORT * 20, 20.0)
    assert not keyword_supports(KEYWORD_SUPPORT * 20 - 0.01, 20.0)
    assert keyword_supports(0.01, None)  # no ceiling known: any match
    assert not keyword_supports(None, 20.0)


def test_a_passage_without_a_cosine_is_supported_by_any_match() -> None:
    """Keyword mode, a document still waiting for its vectors, a base whose model is down:
    no meaning to judge the match against."""
    assert is_supported(0.5, 100.0, None, THRESHOLD)
    assert not is_supported(None, 100.0, None, THRESHOLD)
    # With a cosine, a weak match needs the cosine, a strong one does not.
    assert not is_supported(0.5, 100.0, 0.2, THRESHOLD)
    assert is_supported(0.5, 100.0, 0.4, THRESHOLD)
    assert is_supported(40.0, 100.0, -0.1, THRESHOLD)


@given(candidates(), st.floats(0.0, 100.0), st.floats(-1.0, 1.0))
def test_the_floor_keeps_the_order_and_exactly_the_supported(
    found: tuple[Scored, dict[str, float], dict[str, float]], ceiling: float, threshold: float
) -> None:
    fused, keyword, cosines = found
    kept = supported(fused, keyword, ceiling, cosines, threshold)
    assert kept == [pair for pair in fused if pair in kept]  # order kept, nothing new
    for item, _ in fused:
        expected = is_supported(keyword.get(item), ceiling, cosines.get(item), threshold)
        assert ((item, dict(fused)[item]) in kept) == expected


@given(candidates(), st.floats(0.0, 100.0))
def test_without_a_floor_everything_is_kept(
    found: tuple[Scored, dict[str, float], dict[str, float]], ceiling: float
) -> None:
    fused, keyword, cosines = found
    assert supported(fused, keyword, ceiling, cosines, NO_FLOOR) == fused


def test_per_candidate_thresholds() -> None:
    fused = [("a", 1.0), ("b", 0.5)]
    cosines = {"a": 0.5, "b": 0.5}
    kept = supported(fused, {}, None, cosines, {"a": 0.4, "b": 0.6})
    assert kept == [("a", 1.0)]


def test_the_ceiling_is_idf_times_k1_plus_1_per_term() -> None:
    assert bm25_ceiling([], 100) == 0.0
    assert bm25_ceiling([5, 5], 0) == 0.0
    assert math.isclose(bm25_ceiling([5], 100), bm25_idf(5, 100) * (BM25_K1 + 1))
    # A term no chunk holds counts at the largest idf; one in most chunks at the floor.
    assert bm25_idf(0, 100) == max(bm25_idf(n, 100) for n in range(101))
    assert bm25_idf(90, 100) == bm25_idf(100, 100) > 0
    assert bm25_ceiling([1, 1], 100) == 2 * bm25_ceiling([1], 100)


def test_a_dense_rank_under_the_floor_lifts_no_weak_keyword_match() -> None:
    """The small-base case: 'I can't log in because I lost my credentials'. The keyword arm
    matches the lost-badge page by 'lost' alone (a small share of the question's weight); the
    dense arm ranks it third at 0.30 (under the floor) and the accounts page first at 0.60.
    Fused, the badge page leads (its BM25 is the best there is); the floor cuts it."""
    keyword = [("badges", 1.8)]
    cosines = {"accounts": 0.60, "auth": 0.31, "badges": 0.30, "outage": 0.18}
    dense = sorted(cosines.items(), key=lambda pair: -pair[1])
    fused = convex(Arms(keyword, dense, dense_evidence(cosines)))
    assert fused[0][0] == "badges"
    ceiling = 1.8 / KEYWORD_SUPPORT * 2  # 'lost' holds far less than the share
    kept = supported(fused, dict(keyword), ceiling, cosines, THRESHOLD)
    assert [item for item, _ in kept] == ["accounts"]
