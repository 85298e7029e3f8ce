"""Search with a reranker: the best fused candidates reordered, each with its rerank step
score; the fused order with a warning when the reranker cannot answer. (The gate and the
deadline: test_rerank_policy.py.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lorebase.app import Lorebase, open_lorebase
from lorebase.chunk.base import embed_text
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput
from lorebase.rerank.fake import FakeReranker
from lorebase.rerank.http import HttpReranker
from lorebase.search.gate import rerank_depth
from lorebase.search.query import StepScore
from lorebase.settings import RerankSettings, Settings

SECTIONS = {
    "Vacation": "Employees accrue vacation days at one and a half days per month.",
    "Sick leave": "Sick leave requires a note from a doctor after three consecutive days.",
    "Parental leave": "Parents take sixteen weeks of leave, paid in full.",
    "Expenses": "Travel expenses are reimbursed within thirty days with receipts.",
    "Parking": "Visitors park in the north lot; staff need a permit.",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in SECTIONS.items())
    (root / "handbook.md").write_text(f"# Handbook\n\n{body}\n")
    for n in range(70):  # more candidates than the reranker reads
        (root / f"note{n:02}.md").write_text(f"# Note {n}\n\nA note about leave number {n}.\n")
    return root


def opened(tmp_path: Path, corpus: Path, reranker: FakeReranker | None) -> Lorebase:
    lb = open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder(), reranker=reranker
    )
    lb.add([corpus], kb="hr")
    return lb


def ranked(step: StepScore) -> int:
    """The rank a hit has in a step it was ranked in."""
    assert step.rank is not None
    return step.rank


@pytest.fixture
def reranker() -> FakeReranker:
    return FakeReranker()


@pytest.fixture
def no_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reranker asked even when the first hit is clearly ahead (what these tests look at
    is the reordering, not the gate)."""
    monkeypatch.setattr("lorebase.search.reranking.clearly_ahead", lambda *_: False)


@pytest.fixture
def lb(tmp_path: Path, corpus: Path, reranker: FakeReranker) -> Iterator[Lorebase]:
    with opened(tmp_path, corpus, reranker) as instance:
        yield instance


def test_the_reranker_reorders_the_best_candidates(lb: Lorebase, reranker: FakeReranker) -> None:
    query = "leave"
    plain = lb.search(query, kb="hr", top_k=5)
    reranked = lb.search(query, kb="hr", top_k=5, rerank=True)
    # It read the best fused candidates, each under its title and headings...
    ((seen_query, passages),) = reranker.calls
    assert seen_query == query and len(passages) == rerank_depth(5) == 20
    assert any(p.startswith("Handbook > Sick leave\n") for p in passages)
    # ...and the hits come in its order, which is not the fused one.
    scores = FakeReranker().score(query, passages)
    order = sorted(range(len(passages)), key=lambda i: -scores[i])
    shown = [embed_text(h.provenance.title, h.provenance.trail, h.text) for h in reranked.hits]
    assert shown == [passages[i] for i in order[:5]]
    assert [h.chunk_id for h in reranked.hits] != [h.chunk_id for h in plain.hits]
    assert [h.scores["rerank"].rank for h in reranked.hits] == [1, 2, 3, 4, 5]
    assert all("fused" in h.scores for h in reranked.hits)  # the earlier steps are kept
    assert reranked.hits[0].best_score == reranked.hits[0].scores["rerank"]
    assert "rerank" in reranked.timings_ms and "rerank" not in plain.timings_ms
    assert not reranked.warnings and not reranked.notes
    assert reranked.rerank == "reranked" and plain.rerank is None


def test_only_the_best_candidates_are_reranked_the_rest_follow(
    lb: Lorebase, reranker: FakeReranker
) -> None:
    response = lb.search("leave", kb="hr", top_k=60, rerank=True, collapse=False)
    depth = rerank_depth(60)
    assert depth == 50 and len(reranker.calls[0][1]) == depth
    head, rest = response.hits[:depth], response.hits[depth:]
    assert [h.scores["rerank"].rank for h in head] == list(range(1, depth + 1))
    assert rest and all("rerank" not in h.scores for h in rest)
    fused = [ranked(h.scores["fused"]) for h in rest]
    assert fused == sorted(fused)  # in fused order
    # One hit per document: the passages are reranked first, then grouped by document.
    collapsed = lb.search("leave", kb="hr", top_k=60, rerank=True)
    documents = [h.provenance.document_id for h in collapsed.hits]
    assert len(documents) == len(set(documents))
    ranks = [ranked(h.scores["rerank"]) for h in collapsed.hits if "rerank" in h.scores]
    assert ranks == sorted(ranks) and collapsed.hits[0].scores["rerank"].rank == 1


@pytest.mark.usefixtures("no_gate")
def test_repeated_passages_reach_the_reranker_once(tmp_path: Path) -> None:
    root = tmp_path / "copies"
    root.mkdir()
    for n in range(35):  # the same boilerplate in every file
        (root / f"copy{n:02}.md").write_text("# Notice\n\nParental leave requests go to HR.\n")
    (root / "policy.md").write_text("# Policy\n\nParental leave lasts sixteen weeks.\n")
    reranker = FakeReranker()
    with opened(tmp_path, root, reranker) as lb:
        response = lb.search("parental leave weeks", kb="hr", rerank=True)
    ((_, passages),) = reranker.calls
    assert len(passages) == len(set(passages)) == 2
    assert [h.scores["rerank"].rank for h in response.hits] == [1, 2]
    assert response.hits[0].provenance.trail[-1] == "Policy"


def test_without_rerank_the_reranker_is_not_asked(lb: Lorebase, reranker: FakeReranker) -> None:
    response = lb.search("parking permit", kb="hr")
    assert reranker.calls == [] and all("rerank" not in h.scores for h in response.hits)


def test_a_reranker_that_cannot_answer_keeps_the_fused_order(lb: Lorebase) -> None:
    query = "doctor note sick leave"
    plain = lb.search(query, kb="hr", top_k=5)
    lb.searcher.reranker = FakeReranker(unavailable=True)
    degraded = lb.search(query, kb="hr", top_k=5, rerank=True)
    assert [h.chunk_id for h in degraded.hits] == [h.chunk_id for h in plain.hits]
    assert degraded.warnings == [
        "reranker_unavailable: the reranker did not answer; fused order kept"
    ]
    assert degraded.rerank == "reranker_unavailable"
    assert all("rerank" not in h.scores for h in degraded.hits)


@pytest.mark.usefixtures("no_gate")
def test_a_reranker_that_refuses_says_why_without_the_query(lb: Lorebase) -> None:
    lb.searcher.reranker = FakeReranker(refused=True)
    response = lb.search("secret-walrus sick leave doctor note", kb="hr", rerank=True)
    (warning,) = response.warnings
    assert warning.startswith("reranker_refused: ") and "HTTP 401" in warning
    assert "walrus" not in warning and warning.endswith("fused order kept")
    assert response.rerank == "reranker_refused"


def test_no_reranker_configured_says_so(tmp_path: Path, corpus: Path) -> None:
    with opened(tmp_path, corpus, None) as lb:
        response = lb.search("vacation", kb="hr", rerank=True)
    assert response.warnings == [
        "reranker_unavailable: no reranker is configured; fused order kept"
    ]
    assert response.rerank == "reranker_unavailable"


@pytest.mark.usefixtures("no_gate")
def test_reranked_keyword_and_dense_modes(lb: Lorebase) -> None:
    for mode in ("keyword", "dense"):
        query = "visitors park in the north lot on leave"
        # (no relevance floor: the fake embedder's cosines are low)
        response = lb.search(
            query, kb="hr", mode=mode, top_k=3, rerank=True, no_answer_threshold=-1
        )
        assert response.hits[0].provenance.trail[-1] == "Parking", mode
        assert len(response.hits) == 3 and all("rerank" in h.scores for h in response.hits)


def test_settings_and_the_command_line(tmp_path: Path, corpus: Path) -> None:
    with pytest.raises(InvalidInput, match="LOREBASE_RERANK_URL"):
        Settings.from_env(tmp_path, {"LOREBASE_RERANKER": "http"})
    with pytest.raises(InvalidInput, match="reranker must be one of"):
        Settings.from_env(tmp_path, {"LOREBASE_RERANKER": "bogus"})
    assert Settings.from_env(tmp_path, {"LOREBASE_RERANKER": "fake"}).rerank.kind == "fake"
    runner = CliRunner()
    base = ["--data-dir", str(tmp_path / "cli"), "--embedder", "fake", "--reranker", "fake"]
    assert runner.invoke(app, [*base, "add", str(corpus), "--kb", "hr"]).exit_code == 0
    # The option wins over an incomplete environment (checked only after it is applied).
    fixed = runner.invoke(
        app, [*base[:4], "--reranker", "none", "status"], env={"LOREBASE_RERANKER": "http"}
    )
    assert fixed.exit_code == 0, fixed.output
    result = runner.invoke(
        app, [*base, "search", "doctor note sick leave", "--rerank", "--json", "--top-k", "2"]
    )
    assert result.exit_code == 0, result.output
    assert '"rerank"' in result.stdout and "Sick leave" in result.stdout


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_configured_reranking_server_that_is_down_keeps_the_fused_order(
    tmp_path: Path, corpus: Path
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(
        data_dir=tmp_path / "data",
        rerank=RerankSettings(kind="http", url=f"http://127.0.0.1:{port}/v1", model="bge"),
    )
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        assert isinstance(lb.reranker, HttpReranker)
        assert lb.reranker.endpoint.max_retries == 1  # a search waits: one retry, no more
        lb.add([corpus], kb="hr")
        response = lb.search("doctor note sick leave", kb="hr", rerank=True)
    assert response.warnings == [
        "reranker_unavailable: the reranker did not answer; fused order kept"
    ]
    assert response.hits and all("rerank" not in h.scores for h in response.hits)
