"""Files added on their own are followed, and `docs show|read|delete` through the CLI (fake
embedder)."""

import json
from pathlib import Path
from typing import Protocol

import pytest
from typer.testing import CliRunner, Result

from lorebase.cli.main import app

runner = CliRunner()


class Cli(Protocol):
    """The ``cli`` fixture: ``lorebase`` run on this test's data directory."""

    def __call__(self, *args: str, input: str | None = None) -> Result: ...


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(app, [*base, *args], input=input)

    return invoke


def cited(cli: Cli, query: str) -> list[str]:
    result = cli("search", query, "--mode", "keyword", "--json")
    assert result.exit_code == 0, result.output
    return [hit["path"] for hit in json.loads(result.stdout)["hits"]]


def test_a_file_added_on_its_own_leaves_the_index_when_deleted(cli: Cli, tmp_path: Path) -> None:
    single = tmp_path / "s.md"
    single.write_text("# Single\n\nThe walrus migration plan.\n")
    assert cli("add", str(single)).exit_code == 0
    assert cited(cli, "walrus") == ["s.md"]
    listed = cli("kb", "sources", "list", "default")
    assert listed.exit_code == 0 and listed.stdout.splitlines()[1].split()[-1] == "file"
    sources = json.loads(cli("kb", "sources", "list", "default", "--json").stdout)
    assert [(s["label"], s["path"], s["kind"]) for s in sources] == [("s.md", str(single), "file")]
    single.write_text("# Single\n\nThe narwhal migration plan.\n")
    assert cli("sync").exit_code == 0  # a changed file is read again
    assert cited(cli, "narwhal") == ["s.md"] and cited(cli, "walrus") == []
    single.unlink()
    synced = cli("sync", "--json")
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.stdout)["default"]["removed"] == 1
    assert cited(cli, "narwhal") == []
    assert json.loads(cli("kb", "sources", "list", "default", "--json").stdout) == []


def test_docs_show_read_and_delete(cli: Cli, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leave.md").write_text("# Leave\n\nYou get 25 vacation days.\n")
    single = tmp_path / "s.md"
    single.write_text("# Single\n\nThe walrus migration plan.\n")
    assert cli("add", str(notes), str(single), "--kb", "hr").exit_code == 0
    docs = {d["name"]: d for d in json.loads(cli("docs", "list", "--kb", "hr", "--json").stdout)}
    leave, walrus = docs["notes/leave.md"]["id"], docs["s.md"]["id"]

    shown = cli("docs", "show", leave[:12], "--json")
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    assert record["id"] == leave and record["knowledge_base"] == "hr"
    assert (record["kind"], record["state"], record["title"]) == ("md", "indexed", "Leave")
    assert record["chunks"] >= 1 and record["size"] == len("# Leave\n\nYou get 25 vacation days.\n")
    assert (record["comes_from"], record["source"]) == ("folder", "notes")
    assert record["file"] == (notes / "leave.md").as_posix()
    table = cli("docs", "show", walrus)
    assert table.exit_code == 0 and "comes from" in table.stdout and "s.md" in table.stdout

    read = json.loads(
        cli("docs", "read", leave, "--start", "7", "--max-chars", "3", "--json").stdout
    )
    assert read == {
        "document_id": leave,
        "start": 7,
        "text": "You",
        "total_chars": read["total_chars"],
    }
    plain = cli("docs", "read", leave)
    assert plain.exit_code == 0 and "25 vacation days" in plain.stdout

    kept = cli("docs", "delete", walrus, input="n\n")
    assert kept.exit_code == 1 and cited(cli, "walrus") == ["s.md"]
    gone = cli("docs", "delete", walrus[:8], "--yes", "--json")
    assert gone.exit_code == 0, gone.output
    assert json.loads(gone.stdout) == {"deleted": walrus, "knowledge_base": "hr"}
    assert cited(cli, "walrus") == []
    assert cli("sync", "--kb", "hr").exit_code == 0  # a deleted file is no longer followed
    assert cited(cli, "walrus") == [] and single.exists()

    assert cli("docs", "show", "0" * 32).exit_code == 3
    assert cli("docs", "read", leave, "--max-chars", "0").exit_code == 2
