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
def test_found_by_both_arms_ranks_above_found_by_one(left: list[str], right: list[str]) -> None:
    for fusion in FUSIONS.values():
        fused = [item for item, _ in fusion([ranking(left), ranking(right)])]
        both = set(left) & set(right)
        positions = {item: index for index, item in enumerate(fused)}
        for item in both:
            for single in set(left) ^ set(right):
                assert positions[item] < positions[single]


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
