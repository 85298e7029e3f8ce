"""`lorebase notes add|list|show|edit|versions|delete` (fake embedder, a real SQLite file)."""

import json
from pathlib import Path
from typing import Any, Protocol

import pytest
from typer.testing import CliRunner, Result

from lorebase.cli.main import app

runner = CliRunner()


class Cli(Protocol):
    def __call__(self, *args: str, input: str | None = None) -> Result: ...


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, [*base, *args], input=input)

    assert runner.invoke(app, [*base, "kb", "create", "work"]).exit_code == 0
    return invoke


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def found(cli: Cli, query: str) -> list[str]:
    hits = as_json(cli("search", query, "--kb", "work", "--mode", "keyword", "--json"))["hits"]
    return [hit["document_id"] for hit in hits]


def test_a_note_is_written_searched_edited_and_deleted(cli: Cli) -> None:
    written = as_json(
        cli("notes", "add", "work", "Lab door code: 4711", "--title", "Lab", "--json")
    )
    assert written["created"] is True and written["state"] == "indexed"
    assert written["chunks"] == 1 and written["title"] == "Lab"
    assert found(cli, "4711") == [written["id"]]
    piped = as_json(cli("notes", "add", "work", "--json", input="Standup moved to 10:00\n"))
    assert piped["title"] == "Standup moved to 10:00"
    listed = as_json(cli("notes", "list", "work", "--json"))
    assert [note["id"] for note in listed] == [written["id"], piped["id"]]
    prefix = written["id"][:8]
    assert cli("notes", "edit", prefix).exit_code == 2  # neither a text nor a title
    edited = as_json(cli("notes", "edit", prefix, "-", "--json", input="Lab door code: 9090"))
    assert edited["versions"] == 1 and edited["state"] == "indexed"
    assert found(cli, "9090") == [written["id"]] and found(cli, "4711") == []
    retitled = as_json(cli("notes", "edit", prefix, "--title", "Lab door", "--json"))
    assert retitled["title"] == "Lab door" and retitled["versions"] == 2
    shown = as_json(cli("notes", "show", prefix, "--json"))
    assert (shown["title"], shown["text"]) == ("Lab door", "Lab door code: 9090")
    kept = as_json(cli("notes", "versions", prefix, "--json"))
    assert [(v["version"], v["title"], v["text"]) for v in kept] == [
        (1, "Lab", "Lab door code: 4711"),
        (2, "Lab", "Lab door code: 9090"),
    ]
    assert "version 1: Lab" in cli("notes", "versions", prefix).stdout
    deleted = as_json(cli("notes", "delete", prefix, "--yes", "--json"))
    assert deleted == {"deleted": written["id"], "knowledge_base": "work"}
    assert found(cli, "9090") == []


def test_bad_notes_exit_with_what_to_do(cli: Cli, tmp_path: Path) -> None:
    too_long = cli("notes", "add", "work", input="BLUEHERON " * 2001)
    assert too_long.exit_code == 2
    assert "at most 20000 characters" in too_long.output and "BLUEHERON" not in too_long.output
    assert cli("notes", "add", "work", "   ").exit_code == 2
    assert cli("notes", "add", "nowhere", "text").exit_code == 3
    (tmp_path / "plan.md").write_text("# Plan\n\nThe plan.\n")
    assert cli("add", str(tmp_path / "plan.md"), "--kb", "work").exit_code == 0
    plan = as_json(cli("docs", "list", "--kb", "work", "--json"))[0]["id"]
    for command in (("show", plan), ("edit", plan, "x"), ("versions", plan), ("delete", plan)):
        refused = cli("notes", *command, "--yes" if command[0] == "delete" else "--json")
        assert refused.exit_code == 2 and "not a note" in refused.output
    assert "No notes in work" in cli("notes", "list", "work").stdout
