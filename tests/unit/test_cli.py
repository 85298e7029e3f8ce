import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from lorebase.cli.main import app

runner = CliRunner()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text("# Guide\n\n## Install\n\nRun the installer.\n")
    (tmp_path / "notes.txt").write_text("Plain notes.\n")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "tool.exe").write_bytes(b"MZ")
    (tmp_path / ".hidden.md").write_text("# Hidden\n")
    return tmp_path


def test_extract_a_file_prints_its_elements(folder: Path) -> None:
    result = runner.invoke(app, ["extract", str(folder / "guide.md")])
    assert result.exit_code == 0, result.output
    assert "Install" in result.output and "heading h2" in result.output


def test_extract_json_has_elements_with_offsets(folder: Path) -> None:
    result = runner.invoke(app, ["extract", str(folder / "guide.md"), "--json"])
    data = json.loads(result.stdout)
    assert data["title"] == "Guide"
    assert [e["kind"] for e in data["elements"]] == ["heading", "heading", "paragraph"]
    assert data["elements"][2]["line"] == 5


def test_chunk_a_file_shows_the_trail(folder: Path) -> None:
    result = runner.invoke(app, ["chunk", str(folder / "guide.md"), "--json"])
    chunks = json.loads(result.stdout)["chunks"]
    assert chunks[0]["trail"] == ["Guide", "Install"]
    assert chunks[0]["embed_text"] == "Guide > Install\nRun the installer."


def test_a_folder_gives_a_summary_with_reasons(folder: Path) -> None:
    result = runner.invoke(app, ["chunk", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_path = {f["path"]: f for f in data["files"]}
    assert set(by_path) == {"guide.md", "notes.txt", "empty.txt", "tool.exe"}
    assert by_path["empty.txt"]["reason"] == "empty"
    assert by_path["tool.exe"]["reason"] == "unsupported_format"
    assert data["summary"]["unsupported_extensions"] == {".exe": 1}
    assert data["summary"]["kinds"]["md"]["chunks"] == 1


def test_folder_table_lists_failures(folder: Path) -> None:
    result = runner.invoke(app, ["extract", str(folder)])
    assert result.exit_code == 0
    assert "empty.txt" in result.output and "Summary per kind" in result.output


def test_a_file_that_cannot_be_read_exits_1_with_the_reason(folder: Path) -> None:
    result = runner.invoke(app, ["extract", str(folder / "empty.txt")])
    assert result.exit_code == 1
    assert "empty" in result.output


def test_a_missing_path_exits_3(tmp_path: Path) -> None:
    result = runner.invoke(app, ["extract", str(tmp_path / "nope")])
    assert result.exit_code == 3
    assert "does not exist" in result.output


def test_invalid_chunk_settings_are_refused(folder: Path) -> None:
    result = runner.invoke(app, ["chunk", str(folder), "--chunk-size", "300", "--overlap", "250"])
    assert result.exit_code == 2
    assert "overlap" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("lorebase ")


def test_markup_in_documents_and_names_is_printed_verbatim(tmp_path: Path) -> None:
    (tmp_path / "[red]odd[x].md").write_text("# [bold]Title[/]\n\nText with [/] and [link=x].\n")
    for command in ("extract", "chunk"):
        result = runner.invoke(app, [command, str(tmp_path / "[red]odd[x].md")])
        assert result.exit_code == 0, result.output
        assert "[bold]Title[/]" in result.output
    result = runner.invoke(app, ["extract", str(tmp_path)])
    assert result.exit_code == 0, result.output


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_json_to_a_pipe_is_what_rich_would_write(value: object) -> None:
    """`--json` into a pipe or a file is written as it is: the same text Rich's print_json
    gives (indented by two, non-ASCII kept), without its colouring pass (~35 ms of a search)."""
    import io

    from rich.console import Console

    from lorebase.cli.render import print_json

    plain, coloured = io.StringIO(), io.StringIO()
    print_json(Console(file=plain, width=100_000), value)
    Console(file=coloured, width=100_000).print_json(json.dumps(value, ensure_ascii=False))
    assert plain.getvalue() == coloured.getvalue()
