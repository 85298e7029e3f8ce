"""Issue 12, "a new user's first hour": what the CLI prints when things are new, missing,
removed or failed, and that its JSON speaks the HTTP API's vocabulary."""

import json
import re
from pathlib import Path
from typing import Protocol

import pytest
from typer.testing import CliRunner, Result

from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.api.schemas import DocumentOut, HitOut, KnowledgeBaseOut
from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings

# A new user's first hour, command after command over real data directories: seconds in all,
# left to `make test` (the fast lane stays under a minute).
pytestmark = pytest.mark.slow

runner = CliRunner()


class Cli(Protocol):
    """The ``cli`` fixture: ``lorebase`` run on this test's data directory."""

    def __call__(self, *args: str) -> Result: ...


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def cli(data: Path) -> Cli:
    def invoke(*args: str) -> Result:
        return runner.invoke(app, ["--data-dir", str(data), "--embedder", "fake", *args])

    return invoke


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    sections = "".join(
        f"## Part {n}\n\n" + f"Paragraph {n} about vacation days and leave. " * 30 + "\n\n"
        for n in range(4)
    )
    (root / "leave.md").write_text("# Leave\n\n" + sections)
    (root / "other.md").write_text("# Other\n\nSomething else entirely.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    return root


# -- item 7: deletions -------------------------------------------------------------------------
def test_sync_summary_reports_removed_files(cli: Cli, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    (folder / "other.md").unlink()
    result = cli("sync")
    assert result.exit_code == 0, result.output
    assert "1 removed" in result.output


# -- item 8: labelled scores, visible neighbours -----------------------------------------------
def test_search_labels_each_score_with_its_step(cli: Cli, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    labels = {
        "hybrid": r"fused [01]\.\d{3}\]",
        "keyword": r"bm25 [\d.e-]+\]",
        "dense": r"cosine -?\d\.\d\d\]",
    }
    for mode, label in labels.items():
        result = cli("search", "vacation days", "--mode", mode)
        assert result.exit_code == 0, result.output
        assert re.search(r"\[notes · " + label, result.output), (mode, result.output)


def test_search_neighbors_show_the_chunks_around(cli: Cli, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    plain = cli("search", "Paragraph 2", "--mode", "keyword", "--top-k", "1").output
    around = cli("search", "Paragraph 2", "--mode", "keyword", "--top-k", "1", "--neighbors", "1")
    assert around.exit_code == 0, around.output
    assert "before (chunk" not in plain and "after (chunk" not in plain
    assert "before (chunk" in around.output or "before: none" in around.output
    assert "after (chunk" in around.output or "after: none" in around.output
    assert len(around.output) > len(plain)


# -- item 9: name what was not found; read-only commands create nothing ------------------------
@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["search", "x"],
        ["docs", "list"],
        ["kb", "list"],
        ["users", "list"],
        ["kb", "sources", "list", "default"],
        ["keys", "list"],
        ["teams", "list"],
    ],
)
def test_read_only_commands_on_a_missing_data_dir_say_so_and_create_nothing(
    cli: Cli,
    data: Path,
    command: list[str],
) -> None:
    result = cli(*command)
    assert result.exit_code == 3, result.output
    assert str(data) in result.output
    assert "--data-dir" in result.output and "LOREBASE_HOME" in result.output
    assert not data.exists()


def test_a_local_lorebase_folder_is_hinted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    made = runner.invoke(app, ["--data-dir", ".lorebase", "kb", "create", "docs"])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["--data-dir", str(tmp_path / "elsewhere"), "status"])
    assert result.exit_code == 3
    assert "--data-dir .lorebase" in result.output
    assert not (tmp_path / "elsewhere").exists()


def test_not_found_names_the_knowledge_base(cli: Cli, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    for command in (["search", "vacation", "--kb", "nosuch"], ["docs", "list", "--kb", "nosuch"]):
        result = cli(*command)
        assert result.exit_code == 3
        assert "'nosuch'" in result.output


def test_docs_list_without_kb_lists_every_base(cli: Cli, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    result = cli("docs", "list", "--failed")
    assert result.exit_code == 0, result.output
    assert "broken.pdf" in result.output and "notes" in result.output
    assert "leave.md" not in result.output


# -- item 10: what to do about a failure -------------------------------------------------------
def test_failure_reasons_come_with_what_to_do(cli: Cli, folder: Path) -> None:
    hint = "the file is damaged and no text could be recovered"
    added = cli("add", str(folder), "--kb", "notes")
    assert "corrupt" in added.output and hint in added.output
    listed = cli("docs", "list", "--kb", "notes", "--failed")
    assert "corrupt" in listed.output and hint in listed.output


# -- item 12: progress, empty results, unwrapped paths, help, headers --------------------------
def test_a_missing_path_draws_no_progress_bar(cli: Cli, tmp_path: Path) -> None:
    result = cli("add", str(tmp_path / "nonexistent"))
    assert result.exit_code == 3
    assert "Indexing" not in result.output and "files ·" not in result.output


def test_the_progress_ends_on_the_summarys_chunk_count(cli: Cli, folder: Path) -> None:
    """Not on a terminal (as here), progress is plain lines; the last one is the end state."""
    result = cli("add", str(folder), "--kb", "notes")
    assert result.exit_code == 0, result.output
    summary = re.search(r"(\d+) chunks \(", result.output)
    last = re.findall(r"files · (\d+)/(\d+) chunks done · (\d+) searchable", result.output)
    assert summary and last, result.output
    assert int(summary.group(1)) > 0
    assert last[-1] == (summary.group(1),) * 3


def test_empty_listings_print_a_sentence(cli: Cli, folder: Path) -> None:
    assert cli("kb", "create", "empty").exit_code == 0
    docs = cli("docs", "list", "--kb", "empty")
    assert docs.exit_code == 0 and docs.output.strip() == "No documents in empty."
    failed = cli("docs", "list", "--failed")
    assert failed.output.strip() == "No failed documents in any knowledge base."
    assert cli("kb", "delete", "empty", "--yes").exit_code == 0
    assert cli("kb", "list").output.startswith("No knowledge bases yet")
    assert cli("keys", "list").output.startswith("No API keys yet")


def test_long_paths_are_not_folded_when_output_is_not_a_terminal(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "deep"
    name = "a-rather-long-file-name-that-does-not-fit-in-eighty-columns-" * 2 + "x.pdf"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / name).write_bytes(b"%PDF-1.4 not really")
    added = cli("add", str(root), "--kb", "deep")
    assert f"deep/sub/{name}" in added.output
    assert f"deep/sub/{name}" in cli("docs", "list", "--kb", "deep").output


def test_help_shows_no_type_after_flags() -> None:
    for command in (["--help"], ["docs", "list", "--help"], ["search", "--help"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0
        assert "<bool>" not in result.output
        assert "--json" in result.output or "--version" in result.output


def test_users_list_has_a_header(cli: Cli) -> None:
    assert cli("users", "create", "alice").exit_code == 0
    lines = cli("users", "list").output.splitlines()
    assert lines[0].split() == ["name", "role"]
    assert lines[1].split() == ["alice", "member"]


# -- item 13: one vocabulary for the CLI's and the API's JSON ----------------------------------
def test_cli_json_names_fields_as_the_api_does(cli: Cli, data: Path, folder: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    kbs = json.loads(cli("kb", "list", "--json").stdout)
    docs = json.loads(cli("docs", "list", "--kb", "notes", "--json").stdout)
    hits = json.loads(cli("search", "vacation days", "--json").stdout)["hits"]
    status = json.loads(cli("status", "--json").stdout)["knowledge_bases"]
    assert set(kbs[0]) == set(KnowledgeBaseOut.model_fields)
    assert set(KnowledgeBaseOut.model_fields) <= set(status[0])
    assert set(docs[0]) == set(DocumentOut.model_fields)
    assert set(hits[0]) == set(HitOut.model_fields)
    assert "chunk_count" not in docs[0] and "kb_id" not in docs[0]

    settings = Settings(data_dir=data, serve=ServeSettings(auth=False, workers=1, watch=False))
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        client = api_client(create_app(lb, manage=False))
        assert client.get("/v1/knowledge-bases").json() == kbs
        kb_id = kbs[0]["id"]
        api_docs = client.get(f"/v1/knowledge-bases/{kb_id}/documents").json()
        assert sorted(api_docs, key=lambda d: d["id"]) == sorted(docs, key=lambda d: d["id"])
        api_hits = client.post("/v1/search", json={"query": "vacation days"}).json()["hits"]
        assert [h["chunk_id"] for h in api_hits] == [h["chunk_id"] for h in hits]
        assert set(api_hits[0]) == set(hits[0])
