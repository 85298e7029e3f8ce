"""`lorebase embedders`: the named embedders from the embedders file, probed or not, in a
table or JSON, never with an API key or a URL's password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embedders_file import KEY, PASSWORD, write_embedders
from lorebase.cli.main import app

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]
runner = CliRunner()


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    _, environ = write_embedders(tmp_path)
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]
    result = runner.invoke(app, [*base, "embedders", *args], env=environ)
    return result.exit_code, result.output


def test_json_lists_every_embedder_with_reachability(tmp_path: Path) -> None:
    code, output = run(tmp_path, "--json")
    assert code == 0, output
    rows = {row["name"]: row for row in json.loads(output)}
    assert list(rows) == ["bundled", "remote", "tiny"]
    remote, tiny, bundled = rows["remote"], rows["tiny"], rows["bundled"]
    assert remote["url"].startswith("http://127.0.0.1:") and remote["url"].endswith("/v1")
    assert (remote["kind"], remote["model"]) == ("http", "nomic-embed-text")
    assert (remote["dimensions"], remote["truncate"]) == (768, 256)
    assert (remote["query_prefix"], remote["document_prefix"]) == ("ask: ", None)
    assert remote["reachable"] is False
    assert "127.0.0.1" in remote["detail"]
    assert (tiny["default"], tiny["reachable"], tiny["no_answer_threshold"]) == (True, True, 0.5)
    assert (bundled["model"], bundled["default"]) == ("all-MiniLM-L6-v2", False)
    assert sum(row["default"] for row in rows.values()) == 1
    assert "api_key" not in remote
    assert KEY not in output and PASSWORD not in output and "reader" not in output


def test_no_check_does_not_probe(tmp_path: Path) -> None:
    code, output = run(tmp_path, "--json", "--no-check")
    assert code == 0, output
    assert {row["reachable"] for row in json.loads(output)} == {None}


def test_the_table_marks_the_default_and_says_why_one_does_not_answer(tmp_path: Path) -> None:
    code, output = run(tmp_path)
    assert code == 0, output
    assert "tiny *" in output and "all-MiniLM-L6-v2" in output
    assert "no: embedding server at 127.0.0.1" in " ".join(output.split())
    assert KEY not in output and PASSWORD not in output


def test_it_creates_nothing_in_the_data_directory(tmp_path: Path) -> None:
    run(tmp_path, "--no-check")
    assert not (tmp_path / "data").exists()


def test_a_broken_file_exits_2_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[embedders.x]\nkind = 3\n")
    result = runner.invoke(
        app,
        ["--data-dir", str(tmp_path), "embedders"],
        env={"LOREBASE_EMBEDDERS": str(broken)},
    )
    assert result.exit_code == 2
    unwrapped = "".join(result.output.split())  # rich wraps long lines
    assert "".join(str(broken).split()) in unwrapped and "key'kind'" in unwrapped
