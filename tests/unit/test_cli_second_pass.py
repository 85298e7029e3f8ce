"""Issue 35, "a new user's first hour, second pass": the command line says what was asked
and what to do — a file named inside a followed folder is reported alone, a misspelled base
gets the nearest name, an empty base says it holds nothing yet, every command that ends takes
--json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import pytest
from typer.testing import CliRunner, Result

from lorebase.cli.main import app

pytestmark = pytest.mark.slow  # real data directories, a few seconds in all

runner = CliRunner()


class Cli(Protocol):
    def __call__(self, *args: str) -> Result: ...


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    def invoke(*args: str) -> Result:
        return runner.invoke(
            app, ["--data-dir", str(tmp_path / "data"), "--embedder", "fake", *args]
        )

    return invoke


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "leave.md").write_text("# Leave\n\nVacation days carry over up to ten days.\n")
    (root / "other.md").write_text("# Other\n\nSomething else entirely.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (root / ".lorebaseignore").write_text("drafts/\n")
    (root / "drafts").mkdir()
    (root / "drafts" / "wip.md").write_text("# Draft\n\nNot ready.\n")
    return root


def test_a_file_named_inside_a_followed_folder_is_read_and_reported_alone(
    cli: Cli, folder: Path
) -> None:
    first = cli("add", str(folder), "--kb", "weird")
    assert first.exit_code == 0 and "Files not read" in first.output  # the broken PDF
    (folder / "leave.md").write_text("# Leave\n\nVacation days carry over up to five days.\n")
    (folder / "other.md").write_text("# Other\n\nChanged too, but not named.\n")
    named = cli("add", str(folder / "leave.md"), "--kb", "weird")
    assert named.exit_code == 0, named.output
    assert "weird: 1 file · 0 added · 1 updated · 0 unchanged · 0 removed · 0 not read" in (
        named.output
    )
    assert "Files not read" not in named.output and "broken.pdf" not in named.output
    report = json.loads(cli("add", str(folder / "other.md"), "--kb", "weird", "--json").stdout)
    assert (report["files"], report["updated"], report["removed"]) == (1, 1, 0)
    # A file the folder's own rules leave out is said to be left out, not read.
    ignored = cli("add", str(folder / "drafts" / "wip.md"), "--kb", "weird")
    assert "0 files" in ignored.output and "left out: 1 ignored" in ignored.output
    # Naming the folder too reads the whole folder again.
    both = cli("add", str(folder / "leave.md"), str(folder), "--kb", "weird")
    assert "weird: 3 files" in both.output


def test_a_misspelled_base_gets_the_nearest_name(cli: Cli, folder: Path) -> None:
    assert cli("add", str(folder), "--kb", "notes").exit_code == 0
    for command in (["search", "vacation", "--kb", "ntoes"], ["docs", "list", "--kb", "Notes2"]):
        result = cli(*command)
        assert result.exit_code != 0
        assert "did you mean 'notes'?" in result.output, result.output
    far = cli("search", "vacation", "--kb", "zzzz")
    assert "did you mean" not in far.output and "list them" in far.output


def test_searching_an_empty_base_says_it_holds_nothing_yet(cli: Cli) -> None:
    assert cli("kb", "create", "empty").exit_code == 0
    result = cli("search", "vacation days", "--kb", "empty")
    assert result.exit_code == 0
    assert "has no documents yet" in result.output
    assert "lorebase add PATH --kb empty" in result.output
    assert "Nothing relevant found" not in result.output
    payload = json.loads(cli("search", "vacation days", "--kb", "empty", "--json").stdout)
    assert payload["no_answer"] is True
    assert any(note.startswith("no_documents_yet") for note in payload["notes"])


def test_commands_that_create_and_delete_answer_in_json(cli: Cli, folder: Path) -> None:
    made = json.loads(cli("kb", "create", "handbook", "--json").stdout)
    assert made["name"] == "handbook"
    user = json.loads(cli("users", "create", "ann", "--json").stdout)
    assert user["user"]["name"] == "ann" and user["key"].startswith("lb_")
    key = json.loads(cli("keys", "create", "ann", "--days", "2", "--json").stdout)
    assert key["key"].startswith("lb_") and key["record"]["expires_at"] is not None
    assert "hash" not in json.dumps(key["record"])
    assert json.loads(cli("keys", "revoke", str(key["record"]["id"]), "--json").stdout) == {
        "revoked": key["record"]["id"]
    }
    source = json.loads(cli("kb", "sources", "add", "handbook", str(folder), "--json").stdout)
    assert source["kind"] == "folder" and source["path"] == str(folder)
    gone = json.loads(cli("kb", "sources", "remove", "handbook", str(folder), "--json").stdout)
    assert gone["documents_dropped"] == 0
    assert json.loads(cli("kb", "delete", "handbook", "--yes", "--json").stdout) == {
        "deleted": "handbook"
    }
