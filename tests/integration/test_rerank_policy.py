"""The rerank policy end to end: the gate skips the reranker when the first hit is clearly ahead
(and says so), the deadline keeps the fused order when the reranker is slow, a refused or
failing reranker keeps it too, and `eval --rerank` reports how often the gate skipped."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput
from lorebase.eval.runner import EvalConfig
from lorebase.eval.tasks import evaluate
from lorebase.rerank.fake import FakeReranker
from lorebase.rerank.http import HttpReranker
from lorebase.search.bounds import Mode
from lorebase.settings import RerankSettings, SearchSettings, Settings
from unit.stub_server import Recorder, Reply, running

# A passage the question names outright, among notes that each share one word with it.
POLICY = "# Parental leave\n\nParents take sixteen weeks of parental leave, paid in full.\n"
CLEAR = "parental leave sixteen weeks"  # one passage far ahead in both arms
EVEN = "leave"  # every note matches as well as the next: no clear first
SLEEP = 10.0  # the slow server's delay: far past any deadline here
SLACK = 2.0  # what a loaded machine may add to a deadline


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "policy.md").write_text(POLICY)
    for n in range(30):
        (root / f"note{n:02}.md").write_text(f"# Note {n}\n\nA note about leave number {n}.\n")
    return root


@pytest.fixture
def reranker() -> FakeReranker:
    return FakeReranker()


@pytest.fixture
def lb(tmp_path: Path, corpus: Path, reranker: FakeReranker) -> Iterator[Lorebase]:
    settings = Settings(data_dir=tmp_path / "data")
    with open_lorebase(settings=settings, embedder=FakeEmbedder(), reranker=reranker) as instance:
        instance.add([corpus], kb="hr")
        yield instance


def ids(response: Any) -> list[str]:
    return [hit.chunk_id for hit in response.hits]


# -- the gate -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_the_gate_skips_the_reranker_when_the_first_hit_is_clearly_ahead(
    lb: Lorebase, reranker: FakeReranker, mode: str
) -> None:
    plain = lb.search(CLEAR, kb="hr", mode=mode, top_k=5)
    gated = lb.search(CLEAR, kb="hr", mode=mode, top_k=5, rerank=True)
    assert reranker.calls == []  # never asked
    assert gated.rerank == "rerank_skipped" and not gated.warnings  # a note, not a fault
    assert gated.notes == [
        "rerank_skipped: the first hit leads every search arm by a clear margin; fused order kept"
    ]
    # The fused order, in full (the notes sharing only 'leave' are under the floor in hybrid).
    assert ids(gated) == ids(plain) and len(gated.hits) >= 1
    assert gated.hits[0].provenance.path.endswith("policy.md")
    assert "rerank" not in gated.timings_ms
    assert all("rerank" not in hit.scores for hit in gated.hits)


def test_the_gate_reranks_when_no_hit_is_clearly_ahead(
    lb: Lorebase, reranker: FakeReranker
) -> None:
    response = lb.search(EVEN, kb="hr", top_k=5, rerank=True)
    ((_, passages),) = reranker.calls
    assert len(passages) == 20  # max(20, 3 x 5)
    assert response.rerank == "reranked" and not response.notes and not response.warnings
    assert response.hits[0].best_step == "rerank"


def test_nothing_to_reorder_is_not_sent(lb: Lorebase, reranker: FakeReranker) -> None:
    one = lb.search("sixteen", kb="hr", mode="keyword", rerank=True)
    assert len(one.hits) == 1 and reranker.calls == []
    assert one.rerank == "rerank_skipped" and one.notes[0].startswith("rerank_skipped: ")


# -- the deadline --------------------------------------------------------------------------------
class Slow(Recorder):
    """A reranking server that answers after ``SLEEP`` seconds (or per its script)."""

    def reply(self, request: dict[str, Any]) -> Reply:
        scores = FakeReranker().score(request["query"], request["documents"])
        results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        return Reply(body=json.dumps({"results": results}).encode(), delay=SLEEP)


def timed_search(lb: Lorebase, query: str) -> tuple[Any, float]:
    started = time.perf_counter()
    response = lb.search(query, kb="hr", top_k=5, rerank=True)
    return response, time.perf_counter() - started


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_stuck_reranking_server_is_left_at_the_deadline(tmp_path: Path, corpus: Path) -> None:
    """Configured as a user would: the search returns at the deadline with the fused order."""
    deadline = 0.5
    with running(Slow()) as url:
        settings = Settings(
            data_dir=tmp_path / "data",
            rerank=RerankSettings(kind="http", url=url, model="bge"),
            search=SearchSettings(rerank_deadline=deadline),
        )
        with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
            assert isinstance(lb.reranker, HttpReranker)
            # The client gives up by the deadline too: no thread waits on it for 30 s.
            assert lb.reranker.endpoint.read_timeout == deadline
            lb.add([corpus], kb="hr")
            plain = lb.search(EVEN, kb="hr", top_k=5)
            response, seconds = timed_search(lb, EVEN)
    assert seconds < deadline + SLACK
    assert response.rerank == "rerank_timeout"
    assert response.warnings == [
        "rerank_timeout: the reranker did not answer within 0.5 s; fused order kept"
    ]
    assert ids(response) == ids(plain) and response.hits
    assert deadline * 0.9 <= response.timings_ms["rerank"] / 1000 < deadline + SLACK


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_the_deadline_holds_whatever_the_client_s_own_timeout(lb: Lorebase) -> None:
    """A reranker whose own timeout is long (30 s): the search still returns at the deadline."""
    lb.searcher.settings = SearchSettings(rerank_deadline=0.3)
    plain = lb.search(EVEN, kb="hr", top_k=5)
    with running(Slow()) as url:
        slow = HttpReranker(url, "bge", read_timeout=30.0, max_retries=0)
        lb.searcher.reranker = slow
        response, seconds = timed_search(lb, EVEN)
        slow.close()
    assert seconds < 0.3 + SLACK
    assert response.rerank == "rerank_timeout" and ids(response) == ids(plain)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_search_waiting_on_the_reranker_lets_other_searches_run(lb: Lorebase) -> None:
    """Searches take turns in a process (lorebase.search.turns); one waiting on a reranking
    server gives its turn up: a search without reranking answers meanwhile."""
    lb.searcher.settings = SearchSettings(rerank_deadline=5.0)
    with running(Slow()) as url:
        slow = HttpReranker(url, "bge", read_timeout=30.0, max_retries=0)
        lb.searcher.reranker = slow
        reranked: dict[str, float] = {}
        waiting = threading.Thread(
            target=lambda: reranked.update(seconds=timed_search(lb, EVEN)[1])
        )
        waiting.start()
        time.sleep(0.5)  # the reranked search is waiting on the server by now
        started = time.perf_counter()
        other = lb.search(CLEAR, kb="hr", top_k=5)
        took = time.perf_counter() - started
        waiting.join(30)
        slow.close()
    assert other.hits and took < 2.5  # not after the reranked search's 5 s deadline
    assert reranked["seconds"] >= 4.5


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_refusing_server_keeps_the_fused_order_and_says_why(lb: Lorebase) -> None:
    plain = lb.search(EVEN, kb="hr", top_k=5)
    stub = Slow(script=[Reply(status=401, body=b'{"error": "bad key"}')])
    with running(stub) as url, HttpReranker(url, "bge", max_retries=0) as refusing:
        lb.searcher.reranker = refusing
        response = lb.search(EVEN, kb="hr", top_k=5, rerank=True)
    (warning,) = response.warnings
    assert response.rerank == "reranker_refused" and warning.startswith("reranker_refused: ")
    assert "HTTP 401" in warning and warning.endswith("; fused order kept")
    assert "leave" not in warning and "bad key" not in warning  # neither query nor reply
    assert ids(response) == ids(plain)


def test_a_failing_reranker_within_the_deadline_keeps_the_fused_order(lb: Lorebase) -> None:
    plain = lb.search(EVEN, kb="hr", top_k=5)
    lb.searcher.reranker = FakeReranker(unavailable=True)
    response = lb.search(EVEN, kb="hr", top_k=5, rerank=True)
    assert response.rerank == "reranker_unavailable" and ids(response) == ids(plain)


# -- settings ------------------------------------------------------------------------------------
def test_the_deadline_and_the_floor_are_settings(tmp_path: Path) -> None:
    default = Settings.from_env(tmp_path, {})
    assert default.search == SearchSettings(rerank_deadline=1.0, no_answer_threshold=0.35)
    env = {"LOREBASE_RERANK_DEADLINE": "0.25", "LOREBASE_NO_ANSWER_THRESHOLD": "0.4"}
    assert Settings.from_env(tmp_path, env).search == SearchSettings(0.25, 0.4)
    with pytest.raises(InvalidInput, match="LOREBASE_RERANK_DEADLINE must be a number"):
        Settings.from_env(tmp_path, {"LOREBASE_RERANK_DEADLINE": "soon"})
    with pytest.raises(InvalidInput, match="LOREBASE_RERANK_DEADLINE"):
        Settings.from_env(tmp_path, {"LOREBASE_RERANK_DEADLINE": "0"})
    with pytest.raises(InvalidInput, match="LOREBASE_NO_ANSWER_THRESHOLD"):
        Settings.from_env(tmp_path, {"LOREBASE_NO_ANSWER_THRESHOLD": "1.5"})
    assert default.search.embed_deadline == 10.0
    quick = Settings.from_env(tmp_path, {"LOREBASE_EMBED_DEADLINE": "0.5"})
    assert quick.search.embed_deadline == 0.5
    with pytest.raises(InvalidInput, match="LOREBASE_EMBED_DEADLINE"):
        Settings.from_env(tmp_path, {"LOREBASE_EMBED_DEADLINE": "-1"})


# -- eval --rerank -------------------------------------------------------------------------------
QUESTIONS = [
    (CLEAR, ["policy.md"]),  # clearly ahead: skipped
    ("parental leave", ["policy.md"]),
    (EVEN, ["note00.md"]),  # reranked
    ("leave note", ["note01.md"]),
]


@pytest.fixture
def eval_folder(corpus: Path) -> Path:
    lines = [{"question": q, "documents": d, "answerable": True} for q, d in QUESTIONS]
    (corpus / ".lorebase").mkdir()
    (corpus / ".lorebase" / "evals.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    return corpus


def test_eval_reports_how_often_the_gate_skipped(lb: Lorebase, eval_folder: Path) -> None:
    config = EvalConfig(modes=(Mode.HYBRID,), rerank=True)
    result = evaluate(lb, eval_folder, kb="policy-eval", config=config)
    hybrid = result.mode("hybrid")
    summary = hybrid.rerank
    assert summary is not None
    statuses = [o.rerank for o in hybrid.outcomes]
    assert summary["skipped"] == statuses.count("rerank_skipped") >= 1
    assert summary["reranked"] == statuses.count("reranked") >= 1
    assert summary["questions"] == len(QUESTIONS) and summary["timeout"] == 0
    assert summary["skip_rate"] == summary["skipped"] / len(QUESTIONS)
    spent = sum(o.rerank_ms or 0 for o in hybrid.outcomes)
    assert summary["ms_spent"] == pytest.approx(spent, abs=1e-3)
    assert summary["ms_saved"] >= 0
    assert summary["ms_if_every_query_reranked"] == pytest.approx(
        summary["ms_spent"] + summary["ms_saved"], abs=1e-2
    )
    stored = result.to_json()["modes"][0]["rerank"]
    assert stored == summary  # kept in the result JSON
    without = evaluate(lb, eval_folder, kb="policy-eval", config=EvalConfig(modes=(Mode.HYBRID,)))
    assert without.mode("hybrid").rerank is None


def test_eval_rerank_on_the_command_line(tmp_path: Path, eval_folder: Path) -> None:
    base = ["--data-dir", str(tmp_path / "cli"), "--embedder", "fake", "--reranker", "fake"]
    result = CliRunner().invoke(app, [*base, "eval", str(eval_folder), "--rerank"])
    assert result.exit_code == 0, result.output
    assert "reranked" in result.output and "skipped" in result.output
    assert "rerank ms (saved)" in result.output
    shown = CliRunner().invoke(app, [*base, "eval", str(eval_folder), "--rerank", "--json"])
    assert shown.exit_code == 0, shown.output
    modes = json.loads(shown.stdout)["modes"]
    assert {m["mode"] for m in modes} == {"keyword", "dense", "hybrid"}
    assert all(m["rerank"]["questions"] == len(QUESTIONS) for m in modes)
