"""`lorebase add`, `search`, `status`, `kb`, `docs` through the CLI with the fake embedder."""

import json
from pathlib import Path
from typing import Protocol

import pytest
from typer.testing import CliRunner, Result

from lorebase.cli.main import app

runner = CliRunner()


class Cli(Protocol):
    """The ``cli`` fixture: ``lorebase`` run on this test's data directory."""

    def __call__(self, *args: str) -> Result: ...


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]

    def invoke(*args: str) -> Result:
        return runner.invoke(app, [*base, *args])

    return invoke


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "leave.md").write_text("# Leave\n\n## Vacation\n\nYou get 25 vacation days.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    return root


def test_add_then_search_cites_the_passage(cli: Cli, folder: Path) -> None:
    result = cli("add", str(folder), "--kb", "notes")
    assert result.exit_code == 0, result.output
    assert "1 added" in result.output and "corrupt" in result.output
    result = cli("search", "vacation days", "--kb", "notes")
    assert result.exit_code == 0, result.output
    assert "notes/leave.md › Leave › Vacation (line 5)" in result.output
    data = json.loads(cli("search", "vacation days", "--json").stdout)
    assert data["hits"][0]["citation"] == "notes/leave.md › Leave › Vacation (line 5)"
    assert data["hits"][0]["scores"]["fused"]["rank"] == 1


def test_add_json_report(cli: Cli, folder: Path) -> None:
    data = json.loads(cli("add", str(folder), "--kb", "notes", "--json").stdout)
    assert data["added"] == 1 and data["failed"] == [["notes/broken.pdf", "corrupt"]]


def test_add_counts_what_it_leaves_out_without_naming_secrets(cli: Cli, folder: Path) -> None:
    (folder / ".gitignore").write_text("*.log\n")
    (folder / "debug.log").write_text("noise")
    (folder / "build").mkdir()
    (folder / "build" / "out.md").write_text("# Out\n")
    (folder / "server.pem").write_text("-----BEGIN PRIVATE KEY-----")
    result = cli("add", str(folder), "--kb", "notes")
    assert result.exit_code == 0, result.output
    assert "left out: 1 dependency or build · 1 ignored · 1 secret" in result.output
    assert "server.pem" not in result.output
    data = json.loads(cli("add", str(folder), "--kb", "notes", "--json").stdout)
    assert data["left_out"] == {"dependency_or_build": 1, "ignored": 1, "secret": 1}


def test_add_can_leave_large_files_for_the_next_pass(cli: Cli, folder: Path) -> None:
    (folder / "big.md").write_text("# Big\n\n" + "Whales sing long songs. " * 100)
    first = cli("add", str(folder), "--kb", "notes", "--defer-over-kb", "1")
    assert first.exit_code == 0, first.output
    assert "1 added" in first.output
    assert "1 file over 1 KB is left for the next pass: `lorebase sync` reads it" in first.output
    assert "left for the next pass" in " ".join(cli("status").output.split())
    rest = cli("add", str(folder), "--kb", "notes")
    assert "1 added" in rest.output and "2 unchanged" in rest.output  # broken.pdf too
    assert "left for the next pass" not in rest.output
    assert cli("add", str(folder), "--defer-over-kb", "0").exit_code == 2


def test_kb_and_docs_commands(cli: Cli, folder: Path) -> None:
    assert cli("kb", "create", "team", "--description", "Team docs").exit_code == 0
    assert cli("kb", "create", "team").exit_code == 4  # conflict
    cli("add", str(folder), "--kb", "team")
    names = [kb["name"] for kb in json.loads(cli("kb", "list", "--json").stdout)]
    assert names == ["team"]
    docs = json.loads(cli("docs", "list", "--kb", "team", "--json").stdout)
    assert {d["name"]: d["state"] for d in docs} == {
        "notes/leave.md": "indexed",
        "notes/broken.pdf": "failed",
    }
    failed = cli("docs", "list", "--kb", "team", "--failed")
    assert "broken.pdf" in failed.output and "leave.md" not in failed.output
    status = json.loads(cli("status", "--json").stdout)
    assert status["knowledge_bases"][0]["chunks"] == 1
    counts = ("searchable", "embedded", "embedded_chunks")
    assert [status["knowledge_bases"][0][name] for name in counts] == [1, 1, 1]
    readable = cli("status").output.splitlines()  # one labelled line each, none folded
    assert "  documents  2 (1 indexed, 0 pending, 1 failed)" in readable
    assert "  by keyword 1 documents · 1 chunks searchable" in readable
    assert "  by vector  1 documents · 1 chunks" in readable
    assert "  model      fake · 64 dims" in readable
    assert cli("kb", "delete", "team", "--yes").exit_code == 0
    assert cli("search", "vacation", "--kb", "team").exit_code == 3


def test_errors_exit_with_their_codes(cli: Cli, tmp_path: Path) -> None:
    assert cli("add", str(tmp_path / "missing")).exit_code == 3
    assert cli("search", "anything").exit_code == 3  # no knowledge base yet
    result = runner.invoke(app, ["--data-dir", str(tmp_path), "--embedder", "bogus", "status"])
    assert result.exit_code == 2 and "embedder must be one of" in result.output


def test_embedder_down_search_warns(cli: Cli, folder: Path, tmp_path: Path) -> None:
    cli("add", str(folder), "--kb", "notes")
    down = runner.invoke(
        app, ["--data-dir", str(tmp_path / "data"), "--embedder", "none", "search", "vacation"]
    )
    assert down.exit_code == 0
    assert "embedder_unavailable" in down.output and "leave.md" in down.output


def test_a_name_several_bases_share_is_refused_and_the_id_works(
    cli: Cli, folder: Path, tmp_path: Path
) -> None:
    from lorebase.app import open_lorebase
    from lorebase.service import Caller, Scope
    from lorebase.settings import Settings

    created = cli("kb", "create", "notes")
    assert created.exit_code == 0 and "created knowledge base notes (id 1)" in created.output
    assert cli("kb", "create", "notes").exit_code == 4  # the administrators' own: a clash
    assert cli("kb", "create", "notes", "--scope", "global").exit_code == 0
    # A user's personal base of the same name, made over the API.
    with open_lorebase(settings=Settings(data_dir=tmp_path / "data"), embedder=None) as lb:
        user = lb.accounts.create_user("alice")  # a member: sees only their own
        alice = lb.create_kb("notes", scope=Scope.PERSONAL, caller=Caller(user))
        assert alice.owner == "alice" and alice.id == 3
    listed = cli("kb", "list").output
    assert "personal, administrators" in listed and "personal, alice" in listed
    for command in (
        ("add", str(folder), "--kb", "notes"),
        ("search", "vacation", "--kb", "notes"),
        ("kb", "sources", "list", "notes"),
    ):
        refused = cli(*command)
        assert refused.exit_code == 2, refused.output
        for listed_id in ("1 (personal, administrators)", "2 (global)", "3 (personal, alice)"):
            assert listed_id in refused.output
        assert "give the id" in refused.output
    added = cli("add", str(folder), "--kb", "2")
    assert added.exit_code == 0, added.output
    result = cli("search", "vacation days", "--kb", "2", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["hits"]
    assert json.loads(cli("search", "vacation days", "--kb", "1", "--json").stdout)["hits"] == []
    assert cli("kb", "delete", "3", "--yes").exit_code == 0
    assert cli("kb", "delete", "1", "--yes").exit_code == 0
    # One base of the name left: the name works again.
    assert cli("search", "vacation days", "--kb", "notes").exit_code == 0


def test_search_gives_a_document_once_and_lists_its_other_passages(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "long"
    root.mkdir()
    parts = "\n\n".join(
        f"## Part {n}\n\n" + f"Glacier melt feeds the rivers in part {n}. " * 40 for n in range(4)
    )
    (root / "glaciers.md").write_text(f"# Glaciers\n\n{parts}\n")
    assert cli("add", str(root), "--kb", "ice").exit_code == 0
    result = cli("search", "glacier melt rivers", "--kb", "ice")
    assert result.exit_code == 0, result.output
    assert result.output.count("long/glaciers.md") == 1
    assert "more passages in this document:" in result.output
    assert "· Glaciers › Part" in result.output  # where each stands, without the path again
    # Into a pipe: no line carries trailing spaces (the gap after a hit is an empty line).
    assert not [line for line in result.output.splitlines() if line.endswith(" ")]
    assert "" in result.output.splitlines()
    data = json.loads(cli("search", "glacier melt rivers", "--kb", "ice", "--json").stdout)
    (hit,) = data["hits"]
    assert hit["passages"]
    assert all(p["citation"].startswith("long/glaciers.md") for p in hit["passages"])
    raw = json.loads(cli("search", "glacier melt", "--kb", "ice", "--passages", "--json").stdout)
    assert len(raw["hits"]) > 1 and all(h["passages"] == [] for h in raw["hits"])
