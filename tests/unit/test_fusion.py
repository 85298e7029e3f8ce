import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.fusion import FUSIONS, RRF_K, relative_score, rrf


def test_rrf_golden_values() -> None:
    fused = rrf([[("a", 9.0), ("b", 5.0)], [("b", 0.9), ("c", 0.8)]])
    assert [item for item, _ in fused] == ["b", "a", "c"]
    scores = dict(fused)
    assert scores["b"] == 1 / (RRF_K + 2) + 1 / (RRF_K + 1)
    assert scores["a"] == 1 / (RRF_K + 1)
    assert scores["c"] == 1 / (RRF_K + 2)


def test_relative_score_keeps_distances() -> None:
    fused = relative_score([[("a", 10.0), ("b", 9.9), ("c", 1.0)], [("x", 0.5)]])
    scores = dict(fused)
    assert scores["a"] == 1.0 and scores["c"] == 0.0
    assert scores["b"] > 0.98
    assert scores["x"] == 1.0  # a one-candidate arm scales to 1


def test_single_arm_order_is_kept() -> None:
    ranking = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    for fusion in FUSIONS.values():
        assert [item for item, _ in fusion([ranking])] == ["a", "b", "c"]


ids = st.lists(st.sampled_from([f"c{i}" for i in range(40)]), unique=True, max_size=40)


def ranking(items: list[str]) -> list[tuple[str, float]]:
    return [(item, float(len(items) - rank)) for rank, item in enumerate(items)]


@given(ids, ids)
def test_rrf_is_plain_reciprocal_rank_fusion(left: list[str], right: list[str]) -> None:
    fused = dict(rrf([ranking(left), ranking(right)]))
    for item in set(left) | set(right):
        expected = sum(1 / (RRF_K + arm.index(item) + 1) for arm in (left, right) if item in arm)
        assert fused[item] == pytest.approx(expected)
    scores = list(fused.values())
    assert scores == sorted(scores, reverse=True)


def test_past_rank_61_two_arms_no_longer_beat_one_arms_first() -> None:
    """No consensus key: deep lists (top_k = 100 asks 300 a side) fuse by score alone."""
    left = [(f"l{i}", 1.0) for i in range(70)] + [("both", 0.1)]
    right = [("first", 2.0)] + [(f"r{i}", 1.0) for i in range(69)] + [("both", 0.1)]
    fused = [item for item, _ in rrf([left, right])]
    assert fused.index("first") < fused.index("both")  # 1/61 > 2/131


@given(ids, ids)
def test_ties_are_broken_by_best_rank_then_arm_never_by_id(
    left: list[str], right: list[str]
) -> None:
    renamed = {item: f"z{99 - int(item[1:])}" for item in set(left) | set(right)}
    for fusion in FUSIONS.values():
        fused = [item for item, _ in fusion([ranking(left), ranking(right)])]
        again = fusion([ranking([renamed[i] for i in left]), ranking([renamed[i] for i in right])])
        assert [renamed[item] for item in fused] == [item for item, _ in again]


def test_an_exact_tie_goes_to_the_earlier_arm() -> None:
    assert [item for item, _ in rrf([[("dense", 0.6)], [("keyword", 1.8)]])] == [
        "dense",
        "keyword",
    ]
    assert [item for item, _ in rrf([[("keyword", 1.8)], [("dense", 0.6)]])] == [
        "keyword",
        "dense",
    ]


@given(ids, ids)
def test_fusion_is_deterministic_and_complete(left: list[str], right: list[str]) -> None:
    for fusion in FUSIONS.values():
        first = fusion([ranking(left), ranking(right)])
        assert first == fusion([ranking(left), ranking(right)])
        assert {item for item, _ in first} == set(left) | set(right)
        assert len(first) == len(set(left) | set(right))


@given(ids)
def test_rrf_scores_never_increase_down_the_list(items: list[str]) -> None:
    scores = [score for _, score in rrf([ranking(items)])]
    assert scores == sorted(scores, reverse=True)
