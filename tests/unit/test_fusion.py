"""Fusion: reciprocal rank fusion (the textbook, kept to compare with) and the convex
combination of both arms' complete scores (the default), with hypothesis for their
invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.fusion import (
    DENSE_SHARE,
    FUSIONS,
    RRF_K,
    Arms,
    convex,
    dense_evidence,
    rrf,
)


def test_rrf_golden_values() -> None:
    fused = rrf([[("a", 9.0), ("b", 5.0)], [("b", 0.9), ("c", 0.8)]])
    assert [item for item, _ in fused] == ["b", "a", "c"]
    scores = dict(fused)
    assert scores["b"] == 1 / (RRF_K + 2) + 1 / (RRF_K + 1)
    assert scores["a"] == 1 / (RRF_K + 1)
    assert scores["c"] == 1 / (RRF_K + 2)


def test_convex_golden_values() -> None:
    """Each arm over its best: BM25 10 -> 1, 5 -> 0.5; evidence as given (cosine over the
    best cosine, weighted by reading)."""
    arms = Arms(
        keyword=[("a", 10.0), ("b", 5.0)],
        dense=[("c", 0.8), ("b", 0.6)],
        evidence={"c": 1.0, "b": 0.75, "a": 0.25},
    )
    scores = dict(convex(arms))
    keep = 1 - DENSE_SHARE
    assert scores["a"] == pytest.approx(keep * 1.0 + DENSE_SHARE * 0.25)
    assert scores["b"] == pytest.approx(keep * 0.5 + DENSE_SHARE * 0.75)
    assert scores["c"] == pytest.approx(DENSE_SHARE * 1.0)
    assert [item for item, _ in convex(arms)] == ["b", "c", "a"]


def test_dense_evidence_scales_by_the_best_cosine_and_the_reading() -> None:
    assert dense_evidence({"a": 0.8, "b": 0.4, "c": -0.2}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert dense_evidence({"a": 0.8, "b": 0.4}, 0.1) == pytest.approx({"a": 0.1, "b": 0.05})
    assert dense_evidence({"a": -0.3}) == {"a": 0.0}  # no positive cosine: no evidence
    assert dense_evidence({}) == {}


ids = st.lists(st.sampled_from([f"c{i}" for i in range(40)]), unique=True, max_size=40)
unit = st.floats(0.0, 1.0, allow_nan=False)


def ranking(items: list[str]) -> list[tuple[str, float]]:
    return [(item, float(len(items) - rank)) for rank, item in enumerate(items)]


@st.composite
def arms(draw: st.DrawFn) -> Arms:
    keyword = draw(ids)
    dense = draw(ids)
    scores = {item: draw(st.floats(0.01, 50)) for item in keyword}
    cosines = {item: draw(st.floats(-1.0, 1.0, allow_nan=False)) for item in dense + keyword}
    return Arms(
        keyword=sorted(scores.items(), key=lambda pair: -pair[1]),
        dense=sorted(((i, cosines[i]) for i in dense), key=lambda pair: -pair[1]),
        evidence=dense_evidence(cosines, draw(st.sampled_from([1.0, 0.1]))),
    )


@given(ids, ids)
def test_rrf_is_plain_reciprocal_rank_fusion(left: list[str], right: list[str]) -> None:
    fused = dict(rrf([ranking(left), ranking(right)]))
    for item in set(left) | set(right):
        expected = sum(1 / (RRF_K + arm.index(item) + 1) for arm in (left, right) if item in arm)
        assert fused[item] == pytest.approx(expected)
    scores = list(fused.values())
    assert scores == sorted(scores, reverse=True)


@given(arms())
def test_every_fusion_is_deterministic_complete_and_ordered(both: Arms) -> None:
    candidates = {i for i, _ in both.keyword} | {i for i, _ in both.dense} | set(both.evidence)
    for name, fusion in FUSIONS.items():
        first = fusion(both)
        assert first == fusion(both)
        items = [item for item, _ in first]
        expected = candidates if name == "convex" else {i for i, _ in both.keyword + both.dense}
        assert set(items) == expected and len(items) == len(expected)
        scores = [score for _, score in first]
        assert scores == sorted(scores, reverse=True)


@given(arms())
def test_convex_scores_stay_between_0_and_1(both: Arms) -> None:
    assert all(-1e-9 <= score <= 1 + 1e-9 for _, score in convex(both))


@given(arms(), st.sampled_from([f"c{i}" for i in range(40)]), unit)
def test_more_evidence_never_lowers_a_candidate(both: Arms, item: str, more: float) -> None:
    """Raising one candidate's dense evidence never moves it down."""
    before = [i for i, _ in convex(both)]
    if item not in before:
        return
    raised = dict(both.evidence)
    raised[item] = min(1.0, raised.get(item, 0.0) + more)
    after = [i for i, _ in convex(Arms(both.keyword, both.dense, raised))]
    assert after.index(item) <= before.index(item)


@given(arms())
def test_with_no_dense_share_convex_ranks_by_bm25_alone(both: Arms) -> None:
    fused = convex(both, share=0.0)
    best = max((score for _, score in both.keyword), default=0.0)
    bm25 = dict(both.keyword)
    assert [score for _, score in fused] == pytest.approx(
        [bm25.get(item, 0.0) / best if best else 0.0 for item, _ in fused]
    )


@given(ids, ids)
def test_ties_are_broken_by_best_rank_then_arm_never_by_id(
    left: list[str], right: list[str]
) -> None:
    renamed = {item: f"z{99 - int(item[1:])}" for item in set(left) | set(right)}
    evidence = dict.fromkeys(right, 0.5)
    for fusion in FUSIONS.values():
        fused = [item for item, _ in fusion(Arms(ranking(left), ranking(right), evidence))]
        again = fusion(
            Arms(
                ranking([renamed[i] for i in left]),
                ranking([renamed[i] for i in right]),
                {renamed[i]: 0.5 for i in right},
            )
        )
        assert [renamed[item] for item in fused] == [item for item, _ in again]


def test_past_rank_61_two_arms_no_longer_beat_one_arms_first() -> None:
    """No consensus key: deep lists (top_k = 100 asks 300 a side) fuse by score alone."""
    left = [(f"l{i}", 1.0) for i in range(70)] + [("both", 0.1)]
    right = [("first", 2.0)] + [(f"r{i}", 1.0) for i in range(69)] + [("both", 0.1)]
    fused = [item for item, _ in rrf([left, right])]
    assert fused.index("first") < fused.index("both")  # 1/61 > 2/131


def test_an_exact_tie_goes_to_the_earlier_ranking() -> None:
    assert [item for item, _ in rrf([[("dense", 0.6)], [("keyword", 1.8)]])] == [
        "dense",
        "keyword",
    ]
    assert [item for item, _ in rrf([[("keyword", 1.8)], [("dense", 0.6)]])] == [
        "keyword",
        "dense",
    ]


@given(ids)
def test_rrf_scores_never_increase_down_the_list(items: list[str]) -> None:
    scores = [score for _, score in rrf([ranking(items)])]
    assert scores == sorted(scores, reverse=True)


@given(
    st.dictionaries(
        st.sampled_from([f"c{i}" for i in range(30)]),
        st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.0]),  # ties, the fusion's hard case
        max_size=30,
    ),
    st.lists(st.lists(st.sampled_from([f"c{i}" for i in range(40)]), max_size=45), max_size=3),
)
def test_the_order_is_by_score_then_best_rank_then_arm(
    scores: dict[str, float], lists: list[list[str]]
) -> None:
    """The order written out by hand: highest score first, a tie by the item's smallest rank
    in any ranking and then the first ranking that gave it that rank, an item no ranking
    gave after those that one did (repeats within a ranking included)."""
    from lorebase.search.fusion import _ordered, best_ranks

    by_hand: dict[str, tuple[int, int]] = {}
    for arm, items in enumerate(lists):
        for rank, item in enumerate(items, start=1):
            by_hand[item] = min(by_hand.get(item, (rank, arm)), (rank, arm))
    arms = len(lists)
    assert best_ranks(lists) == {item: rank * arms + arm for item, (rank, arm) in by_hand.items()}
    last = (len(scores) + 1, len(lists))
    expected = sorted(scores, key=lambda item: (-scores[item], by_hand.get(item, last)))
    assert _ordered(scores, lists) == [(item, scores[item]) for item in expected]
