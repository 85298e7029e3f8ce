"""`lorebase eval` through the real pipeline: a guard on ranking quality with the bundled model
(paraphrases, an exact identifier, folded accents, an unanswerable question), BEIR corpora
indexed once, the stored last result, and the command itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from integration.company_docs import COMPANY_DOCS
from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.common import CliContext
from lorebase.cli.evaluate import evaluate as evaluate_command
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import Conflict, InvalidInput
from lorebase.eval.runner import EvalConfig, EvalResult
from lorebase.eval.tasks import evaluate, last_result, prepare_beir
from lorebase.search.bounds import Mode
from lorebase.settings import Settings

DOCS = {
    **COMPANY_DOCS,
    "errors.md": "# Error codes\n\n| code | meaning |\n| --- | --- |\n"
    "| ERR_4711 | the upstream quota was exhausted |\n| ERR_1234 | the disk is full |\n",
    "pt/configuracao.md": "# Configuração\n\nA configuração do sistema é feita no arquivo "
    "principal, com permissões de administrador.\n",
    "security/badges.txt": "Badges\n======\n\nA lost badge is blocked at the security desk; a "
    "new one is printed the same day.\n",
    "dev/auth.py": 'def reset_password(user):\n    """Send a password reset e-mail to the '
    'user."""\n    return mailer.send(user.email, template="reset")\n',
}
QUESTIONS = [
    # Paraphrases: few or no shared words, the dense arm carries them.
    ("I can't log in because I lost my credentials", ["it/accounts.md", "dev/auth.py"]),
    ("how much paid time off do I get each year", ["hr/leave.md"]),
    ("getting my money back for a business trip", ["finance/expenses.md"]),
    ("what to do if the main DB goes down", ["ops/outage.md"]),
    ("where can guests leave their car", ["facilities/parking.md"]),
    ("my access card is gone", ["security/badges.txt"]),
    # Exact identifiers and folded accents: the keyword arm carries them.
    ("ERR_4711", ["errors.md"]),
    ("configuracao do sistema", ["pt/configuracao.md"]),
]
UNANSWERABLE = "What was the final score of the 1954 football world cup?"
# MRR@10 floors a step under what the bundled model gives users here (hybrid 0.625, dense
# 0.625, keyword 0.375 when this was written: paraphrases are the dense arm's job, and three of
# them reach cosines of 0.33-0.34 only, under the relevance floor, so search answers them with
# nothing), so only a real break in ranking trips them. Without the floor (the baselines) the
# dense arm alone reaches 0.94.
FLOORS = {"hybrid": 0.55, "dense": 0.55, "keyword": 0.3}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sources") / "helpdesk"
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    lines = [{"question": q, "documents": docs, "answerable": True} for q, docs in QUESTIONS]
    lines.append({"id": "none", "question": UNANSWERABLE, "documents": [], "answerable": False})
    (root / ".lorebase").mkdir()
    (root / ".lorebase" / "evals.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    return root


@pytest.fixture(scope="module")
def real(onnx_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    from lorebase.embed.onnx import OnnxEmbedder

    settings = Settings(data_dir=tmp_path_factory.mktemp("data"))
    instance = open_lorebase(settings=settings, embedder=OnnxEmbedder(onnx_cache))
    yield instance
    instance.close()


def measured(value: float | None) -> float:
    """A figure the evaluation measured (None, not measured, fails the test)."""
    assert value is not None
    return value


@pytest.fixture(scope="module")
def result(real: Lorebase, folder: Path) -> EvalResult:
    return evaluate(real, folder, config=EvalConfig(ks=(1, 5)))


def test_ranking_quality_floors(result: EvalResult) -> None:
    assert result.questions == len(QUESTIONS) + 1 and result.unanswerable == 1
    for mode, floor in FLOORS.items():
        assert measured(result.mode(mode).metrics["mrr@10"]) >= floor, mode
    hybrid = result.mode("hybrid")
    # Every answer the floor leaves is among the first five; without it, all of them are.
    assert measured(hybrid.metrics["recall@5"]) >= 0.5
    assert result.baselines is not None and result.baselines["rrf"]["recall@5"] == 1.0
    assert measured(hybrid.metrics["ndcg@10"]) >= 0.55


def test_hybrid_answers_at_least_as_well_as_each_arm(result: EvalResult) -> None:
    """Was an ``xfail``: in a small base the dense arm returns every chunk, so a chunk sharing
    one word with the question ('lost', 'leave', Portuguese 'do') counted as found by both arms
    and went first. Now a keyword match holding little of the question's weight needs its
    cosine to answer, and Snowball's stop words drop 'do'. Measured on the answers as users get
    them (the floor applied)."""
    hybrid = measured(result.mode("hybrid").metrics["mrr@10"])
    assert hybrid >= measured(result.mode("dense").metrics["mrr@10"])
    assert hybrid >= measured(result.mode("keyword").metrics["mrr@10"])
    first = {o.id: o.ranked[:1] for o in result.mode("hybrid").outcomes}
    assert first["q1"] == ("helpdesk/it/accounts.md",)  # not the lost-badge page


def test_the_baselines_come_from_the_same_arms(result: EvalResult) -> None:
    assert result.baselines is not None and set(result.baselines) == {"keyword", "dense", "rrf"}
    for figures in result.baselines.values():
        assert set(figures) == set(result.mode("hybrid").metrics)
    # The arms alone are as deep as a search reads them (100 candidates): at least what
    # the one-arm modes give users, who see them cut by the floor.
    dense_arm = measured(result.baselines["dense"]["mrr@10"])
    assert dense_arm >= measured(result.mode("dense").metrics["mrr@10"])
    assert dense_arm >= 0.85
    stored = result.to_json()
    assert stored["baselines"] == result.baselines


def test_identifiers_and_accents_come_first(result: EvalResult) -> None:
    for mode in ("keyword", "hybrid"):
        first = {o.id: o.ranked[:1] for o in result.mode(mode).outcomes}
        assert first["q7"] == ("helpdesk/errors.md",), mode
        assert first["q8"] == ("helpdesk/pt/configuracao.md",), mode


def test_the_unanswerable_question_finds_nothing(result: EvalResult) -> None:
    for mode in ("dense", "hybrid"):
        gate = result.mode(mode).no_answer
        assert gate["unanswerable"] == 1 and gate["no_answer_rate"] == 1.0, mode
        # The three paraphrases under the floor (see FLOORS) lose their answers, no more.
        assert gate["lost_rate"] <= 3 / 8, mode
    keyword = result.mode("keyword").no_answer  # judged too: any matching word answers
    assert keyword["answerable"] == len(QUESTIONS) and keyword["lost_rate"] == 0.0


def test_citations_latency_and_the_stored_result(result: EvalResult, real: Lorebase) -> None:
    for mode in result.modes:
        assert mode.citation_coverage == 1.0
        assert mode.hits > 0
        p50, p95, top = (measured(mode.latency_ms[name]) for name in ("p50", "p95", "max"))
        assert 0 < p50 <= p95 <= top
    stored = last_result(real.settings.data_dir, result.kb)
    assert stored is not None and stored == json.loads(json.dumps(result.to_json()))
    assert "outcomes" not in stored["modes"][0]


def test_matches_the_reference_on_this_run(result: EvalResult) -> None:
    import ir_measures
    from ir_measures import RR, P, R, nDCG

    for mode in result.modes:
        answered = [o for o in mode.outcomes if o.answerable]
        qrels = {o.id: {doc: 1 for doc in _relevant(o.id)} for o in answered}
        run = {o.id: {d: float(-i) for i, d in enumerate(o.ranked)} or {"-": 0.0} for o in answered}
        expected = ir_measures.calc_aggregate([nDCG @ 10, RR @ 10, R @ 5, P @ 1], qrels, run)
        assert mode.metrics["ndcg@10"] == pytest.approx(expected[nDCG @ 10], abs=1e-4)
        assert mode.metrics["mrr@10"] == pytest.approx(expected[RR @ 10], abs=1e-4)
        assert mode.metrics["recall@5"] == pytest.approx(expected[R @ 5], abs=1e-4)
        assert mode.metrics["precision@1"] == pytest.approx(expected[P @ 1], abs=1e-4)


def _relevant(question_id: str) -> list[str]:
    _, docs = QUESTIONS[int(question_id[1:]) - 1]
    return [f"helpdesk/{doc}" for doc in docs]


def test_a_second_run_embeds_nothing(real: Lorebase, folder: Path, result: EvalResult) -> None:
    again = evaluate(real, folder, config=EvalConfig(modes=(Mode.KEYWORD,)))
    assert again.index is not None
    assert (again.index["embedded"], again.index["unchanged"]) == (0, len(DOCS))


# -- BEIR corpora and the command, with the fake embedder -----------------------------------


def write_beir(root: Path, extra: str = "") -> Path:
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = [
        {"_id": "w1", "title": "Wing flutter", "text": "Flutter of swept wings at high speed."},
        {"_id": "h2", "title": "Heat transfer", "text": "Heat conduction in composite slabs."},
        {"_id": "b3", "title": "Boundary layers", "text": "Laminar boundary layer separation."},
    ]
    lines = [json.dumps(r) for r in corpus] + ([extra] if extra else [])
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    queries = [{"_id": "1", "text": "swept wing flutter"}, {"_id": "2", "text": "heat slabs"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\tw1\t2\n2\th2\t1\n")
    return root


def fake(tmp_path: Path) -> Lorebase:
    return open_lorebase(settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder())


def test_beir_corpus_is_indexed_once_and_maps_hits_to_ids(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "mini")
    with fake(tmp_path) as lb:
        first = evaluate(lb, beir)
        assert first.kb == "eval-mini" and first.documents == 3
        assert first.mode("keyword").metrics["mrr@10"] == 1.0
        assert first.index and first.index["added"] == 3
        second = evaluate(lb, beir)
        assert second.index and (second.index["embedded"], second.index["unchanged"]) == (0, 3)
        # A changed corpus replaces the knowledge base's documents.
        write_beir(beir, json.dumps({"_id": "n4", "title": "Nozzles", "text": "Nozzle flow."}))
        third = evaluate(lb, beir)
        assert third.documents == 4
        assert third.index and third.index["reused"] >= 3  # vectors of unchanged text kept


def test_beir_refuses_a_knowledge_base_it_did_not_make(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "mini")
    with fake(tmp_path) as lb:
        lb.create_kb("mine")
        with pytest.raises(Conflict):
            prepare_beir(lb, beir, kb="mine")


def test_inputs_are_checked(tmp_path: Path, folder: Path) -> None:
    with fake(tmp_path) as lb:
        with pytest.raises(InvalidInput):
            evaluate(lb, tmp_path)  # neither BEIR nor evals.jsonl
        with pytest.raises(InvalidInput):
            evaluate(lb)
        with pytest.raises(InvalidInput):
            EvalConfig(ks=(0,))


def test_a_search_asks_for_the_ten_documents_users_see() -> None:
    assert EvalConfig().top_k == 10
    assert EvalConfig(ks=(1, 5)).top_k == 10
    assert EvalConfig(ks=(10, 100)).top_k == 100  # the largest k


def cli(tmp_path: Path) -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = CliContext(data_dir=tmp_path / "data", embedder="fake", reranker="fake")

    app.command("eval")(evaluate_command)
    return app


def test_the_command(tmp_path: Path, folder: Path) -> None:
    app, runner = cli(tmp_path), CliRunner()
    done = runner.invoke(app, ["eval", str(folder), "--mode", "hybrid", "--k", "3", "--json"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["kb"] == "helpdesk" and out["config"]["ks"] == [3]
    assert [m["mode"] for m in out["modes"]] == ["hybrid"]
    assert set(out["modes"][0]["metrics"]) == {"recall@3", "precision@3", "mrr@10", "ndcg@10"}
    table = runner.invoke(app, ["eval", "--kb", "helpdesk", "--last"])
    assert table.exit_code == 0 and "nDCG@10" in table.stdout and "hybrid" in table.stdout
    assert "plain RRF" in table.stdout and "no answer (unanswerable)" in table.stdout
    evals = folder / ".lorebase" / "evals.jsonl"
    with open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder()
    ) as lb:
        assert lb.knowledge_bases() == []  # the folder was evaluated in a directory of its own
        lb.add([folder], kb="helpdesk")
    again = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            "helpdesk",
            "--evals",
            str(evals),
            "--json",
            "--mode",
            "dense",
            "--details",
        ],
    )
    assert again.exit_code == 0, again.output
    details = json.loads(again.stdout)["modes"][0]["outcomes"]
    assert details[6]["ranked"][0] == "helpdesk/errors.md"
    reranked = runner.invoke(
        app,
        [
            "eval",
            "--kb",
            "helpdesk",
            "--evals",
            str(evals),
            "--json",
            "--mode",
            "keyword",
            "--rerank",
        ],
    )
    assert reranked.exit_code == 0, reranked.output
    result = json.loads(reranked.stdout)
    assert result["config"]["rerank"] is True and not result["modes"][0]["warnings"]
    missing = runner.invoke(app, ["eval", "--kb", "nope", "--last"])
    assert missing.exit_code == 3
    bad = runner.invoke(app, ["eval", str(tmp_path / "absent")])
    assert bad.exit_code == 3


def test_evaluations_stay_out_of_the_users_data_directory(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "mini")
    with fake(tmp_path) as lb:
        # An eval base an older lorebase left in the user's data directory, with its files.
        digest = "ab" * 8
        lb.create_kb("eval-mini", description=f"lorebase eval corpus mini sha256:{digest}")
        corpus = lb.settings.data_dir / "evals" / "corpora" / f"mini-{digest}"
        corpus.mkdir(parents=True)
        (corpus / "w1.txt").write_text("old corpus")
        first = evaluate(lb, beir)
        assert any("older lorebase" in note for note in first.notes)
        assert lb.knowledge_bases() == [] and not corpus.exists()
        assert last_result(lb.settings.data_dir, "eval-mini") is not None
        again = evaluate(lb, beir)  # the evaluation's own index is reused
        assert again.index and again.index["unchanged"] == 3 and not again.notes
        # Deleting a base removes its last evaluation too.
        lb.add([write_beir(tmp_path / "docs")], kb="docs")
        evals = tmp_path / "evals.jsonl"
        evals.write_text(json.dumps({"question": "swept wing", "documents": ["docs/corpus.jsonl"]}))
        evaluate(lb, kb="docs", evals=evals)
        stored = lb.settings.data_dir / "evals" / "docs.json"
        assert stored.is_file()
        lb.delete_kb("docs")
        assert not stored.exists()


def test_halves_and_off_topic_questions(tmp_path: Path) -> None:
    """--half asks one half of the questions (by a stable hash of their ids); --off-topic adds
    questions the base cannot answer, measured as unanswerable ones."""
    beir = write_beir(tmp_path / "mini")
    off = tmp_path / "off.jsonl"
    off.write_text(
        "\n".join(
            json.dumps({"_id": str(n), "text": text})
            for n, text in enumerate(["sourdough starter hydration", "tax return deadline"])
        )
    )
    app, runner = cli(tmp_path), CliRunner()
    whole = json.loads(runner.invoke(app, ["eval", str(beir), "--json"]).stdout)
    halves = [
        json.loads(runner.invoke(app, ["eval", str(beir), "--half", h, "--json"]).stdout)
        for h in ("a", "b")
    ]
    assert sum(h["questions"] for h in halves) == whole["questions"] == 2
    assert [h["config"]["half"] for h in halves] == ["a", "b"]
    added = runner.invoke(app, ["eval", str(beir), "--off-topic", str(off), "--json"])
    assert added.exit_code == 0, added.output
    data = json.loads(added.stdout)
    assert data["unanswerable"] == 2 and data["questions"] == 4
    hybrid = next(m for m in data["modes"] if m["mode"] == "hybrid")
    assert hybrid["no_answer"]["unanswerable"] == 2
    assert hybrid["no_answer"]["no_answer_rate"] is not None
    assert data["baselines"]["rrf"]["mrr@10"] is not None
    bad = runner.invoke(app, ["eval", str(beir), "--half", "c"])
    assert bad.exit_code == 2 and "a or b" in bad.output
    nothing = runner.invoke(app, ["eval", str(beir), "--off-topic", str(tmp_path / "none")])
    assert nothing.exit_code == 3
