"""The eval's pure parts: halves, the baselines' rankings, the no-answer summary, off-topic
questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import InvalidInput
from lorebase.eval.datasets import OFF_TOPIC_PREFIX, load_off_topic
from lorebase.eval.runner import (
    EvalConfig,
    QuestionOutcome,
    baseline_rankings,
    no_answer_summary,
    query_half,
)
from lorebase.search.fusion import RRF_K


def test_halves_are_a_stable_hash_of_the_id() -> None:
    # Pinned: a half must never move between runs, machines or versions.
    # sha256("1")[0] = 0x6b (odd: b), sha256("2")[0] = 0xd4 (even: a), ...
    assert [query_half(i) for i in ("1", "2", "3", "q17", "off-topic:x")] == [
        "b",
        "a",
        "a",
        "a",
        "a",
    ]
    assert {query_half(str(i)) for i in range(50)} == {"a", "b"}
    share = sum(query_half(str(i)) == "a" for i in range(2000)) / 2000
    assert 0.45 < share < 0.55


@given(st.text(max_size=40))
def test_every_id_has_one_half(question_id: str) -> None:
    assert query_half(question_id) in ("a", "b")
    assert query_half(question_id) == query_half(question_id)


def test_the_baselines_are_each_arm_and_plain_rrf_of_documents() -> None:
    out = baseline_rankings(["a", "b", "c"], ["c", "d"])
    assert out["keyword"] == ["a", "b", "c"] and out["dense"] == ["c", "d"]
    # c: 1/(k+3) + 1/(k+1) beats a's 1/(k+1).
    assert out["rrf"][0] == "c" and 1 / (RRF_K + 3) + 1 / (RRF_K + 1) > 1 / (RRF_K + 1)
    assert sorted(out["rrf"]) == ["a", "b", "c", "d"]


def outcome(answerable: bool, no_answer: bool, lost: bool | None = None) -> QuestionOutcome:
    return QuestionOutcome("q", answerable, (), None, 1.0, {}, no_answer=no_answer, lost=lost)


def test_the_no_answer_summary_counts_both_rates() -> None:
    outcomes = [
        outcome(False, True),
        outcome(False, True),
        outcome(False, False),
        outcome(True, False, lost=False),
        outcome(True, True, lost=True),
        outcome(True, False, lost=False),
        outcome(True, False, lost=False),
    ]
    summary = no_answer_summary(outcomes, 0.35)
    assert summary["unanswerable"] == 3 and summary["no_answer_rate"] == pytest.approx(2 / 3)
    assert summary["answerable"] == 4 and summary["lost_rate"] == 0.25
    assert summary["turned_away_rate"] == 0.25
    empty = no_answer_summary([], 0.35)
    assert empty["no_answer_rate"] is None and empty["lost_rate"] is None


def test_a_half_is_a_or_b() -> None:
    assert EvalConfig(half="a").half == "a"
    with pytest.raises(InvalidInput, match="a or b"):
        EvalConfig(half="c")  # type: ignore[arg-type]
    assert EvalConfig().top_k == 10 and EvalConfig(ks=(5, 50)).top_k == 50


def test_off_topic_questions_come_from_beir_queries_or_an_evals_file(tmp_path: Path) -> None:
    beir = tmp_path / "queries.jsonl"
    beir.write_text(json.dumps({"_id": "7", "text": "how do glaciers move"}) + "\n\n")
    evals = tmp_path / "evals.jsonl"
    evals.write_text(json.dumps({"question": "who won", "documents": ["a.md"]}) + "\n")
    (question,) = load_off_topic(beir)
    assert question.id == f"{OFF_TOPIC_PREFIX}7" and not question.answerable
    assert question.relevance == {}
    (other,) = load_off_topic(evals)
    assert other.id == f"{OFF_TOPIC_PREFIX}q1" and not other.answerable  # whatever the file says
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"_id": "1"}) + "\n")
    with pytest.raises(InvalidInput, match="line 1"):
        load_off_topic(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InvalidInput, match="no questions"):
        load_off_topic(empty)
