"""The relevance floor on a small real base (SQLite, the fake embedder): an off-topic question
finds nothing and says so (`no_answer`) in the library, the REST API, the CLI and the agent
tools; an on-topic one still answers; keyword search never loses a hit to the floor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from budget import examples
from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase
from lorebase.cli.main import app
from lorebase.errors import InvalidInput
from lorebase.search.floor import keyword_supports
from lorebase.search.query import Hit
from lorebase.settings import SearchSettings
from small_base import small_base, write_files

DOCS = {
    "leave.md": "# Leave\n\n## Vacation\n\nStaff earn twenty-five vacation days a year.\n",
    "expenses.md": "# Expenses\n\nTravel expenses are reimbursed within thirty days.\n",
    "parking.md": "# Parking\n\nVisitors park in the north lot; staff need a permit.\n",
    "outage.md": "# Outage\n\nWhen the database stops, fail over to the replica.\n",
}
OFF_TOPIC = "zeppelin quasar marmalade"  # no word of the base, nothing near in meaning
ON_TOPIC = "vacation days"
WORDS = sorted({w.strip(".;#,").lower() for text in DOCS.values() for w in text.split()} - {""})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("corpus"), DOCS)


@pytest.fixture(scope="module")
def lb(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    with small_base(tmp_path_factory.mktemp("data"), corpus, "hr") as instance:
        yield instance


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_an_off_topic_question_finds_nothing_and_says_so(lb: Lorebase, mode: str) -> None:
    floorless = lb.search(OFF_TOPIC, kb="hr", mode=mode, no_answer_threshold=float("-inf"))
    assert floorless.hits  # without the floor every chunk comes back: the dense arm's nearest
    response = lb.search(OFF_TOPIC, kb="hr", mode=mode)
    assert response.hits == [] and response.no_answer
    assert not response.warnings  # nothing degraded: there is nothing to find


@pytest.mark.parametrize("mode", ["hybrid", "dense", "keyword"])
def test_an_on_topic_question_still_answers(lb: Lorebase, mode: str) -> None:
    response = lb.search(ON_TOPIC, kb="hr", mode=mode)
    assert not response.no_answer
    assert response.hits[0].provenance.path.endswith("leave.md")


def test_the_floor_is_the_configured_threshold(lb: Lorebase) -> None:
    best = lb.search(ON_TOPIC, kb="hr", mode="dense").hits[0].scores["dense"].score
    assert lb.searcher.settings == SearchSettings()  # 0.35
    above = lb.search(ON_TOPIC, kb="hr", mode="dense", no_answer_threshold=best + 1e-6)
    assert above.no_answer
    with pytest.raises(InvalidInput, match="at most 1"):
        lb.search(ON_TOPIC, kb="hr", no_answer_threshold=1.5)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.sampled_from([0.35, 0.9]))
def test_the_floor_keeps_exactly_what_an_arm_supports(
    lb: Lorebase, words: list[str], threshold: float
) -> None:
    """A hybrid hit is a cosine at the threshold or a keyword match holding the share of the
    query's ceiling; every such keyword match of the keyword arm is kept."""
    query = " ".join(words)
    ceiling = lb.store.keyword_ceiling([lb.kb("hr").id], query)
    keyword = lb.search(query, kb="hr", mode="keyword", top_k=100, collapse=False)
    hybrid = lb.search(query, kb="hr", top_k=100, collapse=False, no_answer_threshold=threshold)

    def strong(hit: Hit) -> bool:
        return "keyword" in hit.scores and keyword_supports(hit.scores["keyword"].score, ceiling)

    assert {h.chunk_id for h in keyword.hits if strong(h)} <= {h.chunk_id for h in hybrid.hits}
    for hit in hybrid.hits:
        assert strong(hit) or hit.scores["dense"].score >= threshold


def test_the_api_says_no_answer(lb: Lorebase) -> None:
    client = api_client(create_app(lb, manage=False))
    nothing = client.post("/v1/search", json={"query": OFF_TOPIC}).json()
    assert nothing["no_answer"] is True and nothing["hits"] == []
    assert nothing["rerank"] is None and nothing["notes"] == []
    found = client.post("/v1/search", json={"query": ON_TOPIC, "rerank": True}).json()
    assert found["no_answer"] is False and found["hits"]
    assert found["rerank"] == "reranker_unavailable"  # none configured: said, not failed
    assert found["warnings"] == [
        "reranker_unavailable: no reranker is configured; fused order kept"
    ]
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    out = schema["SearchOut"]["properties"]
    assert {"no_answer", "notes", "rerank"} <= set(out)
    assert "relevance floor" in out["no_answer"]["description"]
    assert "cosine" in schema["HitOut"]["properties"]["scores"]["description"]


def test_the_cli_says_nothing_relevant_was_found(lb: Lorebase, corpus: Path) -> None:
    base = ["--data-dir", str(lb.settings.data_dir), "--embedder", "fake"]
    runner = CliRunner()
    nothing = runner.invoke(app, [*base, "search", OFF_TOPIC])
    assert nothing.exit_code == 0, nothing.output
    assert "Nothing relevant found" in nothing.output
    as_json = runner.invoke(app, [*base, "search", OFF_TOPIC, "--json"])
    assert as_json.exit_code == 0 and '"no_answer": true' in as_json.stdout
    found = runner.invoke(app, [*base, "search", ON_TOPIC])
    assert found.exit_code == 0 and "Nothing relevant" not in found.output
    assert "leave.md" in found.output
