"""Retrieval metrics: hand-computed values, invariants, and agreement with trec_eval
(through ir-measures) on random graded runs."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.eval import metrics
from lorebase.eval.metrics import (
    abstains,
    citation_complete,
    distinct,
    ndcg_at_k,
    no_answer_correct,
    percentile,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

# Graded judgments: d1 is the complete answer, d3 partial, d5 judged not relevant.
RELEVANCE = {"d1": 3, "d3": 1, "d5": 0, "d9": 2}
RANKED = ["d2", "d1", "d5", "d3", "d4"]


def test_recall_counts_each_relevant_document_once() -> None:
    assert recall_at_k(RANKED, RELEVANCE, 1) == 0.0
    assert recall_at_k(RANKED, RELEVANCE, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, RELEVANCE, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, {"d5": 0}, 5) == 0.0  # nothing relevant


def test_precision_divides_by_k_even_when_fewer_came_back() -> None:
    assert precision_at_k(RANKED, RELEVANCE, 2) == pytest.approx(1 / 2)
    assert precision_at_k(RANKED, RELEVANCE, 10) == pytest.approx(2 / 10)
    assert precision_at_k([], RELEVANCE, 10) == 0.0


def test_reciprocal_rank_of_the_first_relevant_within_the_cutoff() -> None:
    assert reciprocal_rank(RANKED, RELEVANCE) == pytest.approx(1 / 2)
    assert reciprocal_rank(RANKED, RELEVANCE, k=1) == 0.0
    assert reciprocal_rank(["d9"], RELEVANCE) == 1.0


def test_ndcg_by_hand_with_linear_gains() -> None:
    # DCG: d1 (3) at rank 2, d3 (1) at rank 4 -> 3/log2(3) + 1/log2(5).
    # Ideal: 3, 2, 1 at ranks 1-3 -> 3/1 + 2/log2(3) + 1/2.
    dcg = 3 / math.log2(3) + 1 / math.log2(5)
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert ndcg_at_k(RANKED, RELEVANCE, 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(["d1", "d9", "d3"], RELEVANCE, 10) == pytest.approx(1.0)
    assert ndcg_at_k(RANKED, {"d5": 0}, 10) == 0.0
    # Only the first k count, on both sides.
    assert ndcg_at_k(["d9", "d1"], RELEVANCE, 1) == pytest.approx(2 / 3)


def test_distinct_keeps_the_first_place_of_each_document() -> None:
    assert distinct(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]


def test_percentiles_interpolate_between_ranks() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == pytest.approx(25.0)
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile(values, 100) == 40.0
    assert percentile([], 50) is None
    summary = metrics.latency_summary(values)
    assert (summary["p50"], summary["max"], summary["mean"]) == (25.0, 40.0, 25.0)
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_no_answer_gate() -> None:
    assert abstains(None, 0.35) and abstains(0.2, 0.35) and not abstains(0.35, 0.35)
    assert no_answer_correct(0.2, 0.35, answerable=False)
    assert not no_answer_correct(0.6, 0.35, answerable=False)
    assert no_answer_correct(0.6, 0.35, answerable=True)
    assert not no_answer_correct(None, 0.35, answerable=True)


@pytest.mark.parametrize(
    ("kind", "fields", "expected"),
    [
        ("pdf", {"page": 3}, True),
        ("pdf", {"line": 3}, False),
        ("md", {"line": 12, "trail": ("Guide",)}, True),
        ("txt", {}, False),
        ("code", {"line": 1}, True),
        ("docx", {"trail": ("Leave", "Vacation")}, True),
        ("html", {}, False),
        ("other", {}, True),
    ],
)
def test_citation_needs_the_locator_of_its_format(
    kind: str, fields: dict[str, Any], expected: bool
) -> None:
    assert citation_complete(kind, "folder/file", **fields) is expected
    assert not citation_complete(kind, "", **fields)


# -- against the reference implementation ---------------------------------------------------

DOCS = [f"d{i}" for i in range(30)]


@st.composite
def judged_runs(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Queries with graded judgments (at least one relevant) and a ranked run each."""
    qrels, run = {}, {}
    for query in range(draw(st.integers(1, 6))):
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1))
        if not any(judged.values()):
            judged[next(iter(judged))] = 1
        ranked = draw(st.lists(st.sampled_from(DOCS), max_size=25, unique=True))
        qrels[f"q{query}"], run[f"q{query}"] = judged, ranked or ["unjudged"]
    return qrels, run


@settings(max_examples=examples(40), deadline=None)
@given(judged_runs())
def test_agrees_with_trec_eval_through_ir_measures(
    case: tuple[dict[str, dict[str, int]], dict[str, list[str]]],
) -> None:
    import ir_measures
    from ir_measures import RR, P, R, nDCG

    qrels, ranked = case
    # Strictly decreasing scores, so trec_eval keeps our order (it sorts by score).
    run = {q: {doc: float(len(ids) - i) for i, doc in enumerate(ids)} for q, ids in ranked.items()}
    expected = ir_measures.calc_aggregate([nDCG @ 10, RR @ 10, R @ 5, P @ 5], qrels, run)
    ours = {
        "ndcg": metrics.mean(ndcg_at_k(ranked[q], qrels[q], 10) for q in qrels),
        "rr": metrics.mean(reciprocal_rank(ranked[q], qrels[q], 10) for q in qrels),
        "recall": metrics.mean(recall_at_k(ranked[q], qrels[q], 5) for q in qrels),
        "precision": metrics.mean(precision_at_k(ranked[q], qrels[q], 5) for q in qrels),
    }
    assert ours["ndcg"] == pytest.approx(expected[nDCG @ 10], abs=1e-4)
    assert ours["rr"] == pytest.approx(expected[RR @ 10], abs=1e-4)
    assert ours["recall"] == pytest.approx(expected[R @ 5], abs=1e-4)
    assert ours["precision"] == pytest.approx(expected[P @ 5], abs=1e-4)
