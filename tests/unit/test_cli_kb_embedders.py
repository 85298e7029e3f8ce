"""`kb create --embedder`, `kb update --embedder NAME --reembed`, and the embedder in `kb list`
and `status`: a base keeps the model it is made with until an explicit re-embed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lorebase.cli.main import app
from lorebase.lock import IngestLock

runner = CliRunner()

EMBEDDERS = (
    'default = "small"\n'
    "[embedders.small]\n"
    'kind = "fake"\n'
    "dimensions = 16\n"
    "[embedders.tiny]\n"
    'kind = "fake"\n'
    "dimensions = 8\n"
)


def cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    path = tmp_path / "embedders.toml"
    path.write_text(EMBEDDERS)
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]
    result = runner.invoke(app, [*base, *args], env={"LOREBASE_EMBEDDERS": str(path)})
    return result.exit_code, result.output


def kb_json(tmp_path: Path, name: str) -> dict[str, object]:
    code, output = cli(tmp_path, "kb", "list", "--json")
    assert code == 0, output
    found: dict[str, object] = next(kb for kb in json.loads(output) if kb["name"] == name)
    return found


def test_a_base_is_made_with_an_embedder_and_moved_only_by_a_reembed(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Herons\n\nThe grey heron stands in shallow water.\n")
    (folder / "b.md").write_text("# Owls\n\nBarn owls hunt voles at night.\n")

    code, output = cli(tmp_path, "kb", "create", "notes", "--embedder", "tiny")
    assert code == 0 and "embedded with tiny" in output, output
    code, output = cli(tmp_path, "kb", "create", "other")
    assert code == 0 and "embedded with small" in output, output  # the default
    code, output = cli(tmp_path, "kb", "create", "bad", "--embedder", "nope")
    assert code != 0 and "no embedder named 'nope'" in output and "tiny" in output

    code, output = cli(tmp_path, "add", str(folder), "--kb", "notes")
    assert code == 0, output
    notes = kb_json(tmp_path, "notes")
    assert (notes["embedder"], notes["embedder_next"], notes["embedder_reachable"]) == (
        "tiny",
        None,
        True,
    )
    assert str(notes["embedding_identity"]).endswith("/8")

    code, output = cli(tmp_path, "kb", "update", "notes", "--embedder", "small")
    assert code != 0 and "--reembed" in output
    assert kb_json(tmp_path, "notes")["embedder"] == "tiny"

    code, output = cli(tmp_path, "kb", "update", "notes", "--embedder", "small", "--reembed")
    assert code == 0, output
    assert "now answers with small" in output
    notes = kb_json(tmp_path, "notes")
    assert (notes["embedder"], notes["embedder_next"]) == ("small", None)
    assert str(notes["embedding_identity"]).endswith("/16")

    code, output = cli(tmp_path, "status")
    assert code == 0, output
    assert "small · reachable" in output
    code, output = cli(tmp_path, "kb", "list")
    assert code == 0 and "embedder" in output
    assert [line for line in output.splitlines() if " notes " in line and "small" in line]
    code, output = cli(tmp_path, "search", "heron in water", "--kb", "notes")
    assert code == 0 and "a.md" in output


def test_a_reembed_asked_for_while_another_process_indexes_is_recorded_for_it(
    tmp_path: Path,
) -> None:
    """`serve` holds the ingestion lock: the command records the move and says who does it
    (the server's sweep takes the moving base over), instead of failing."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Herons\n\nThe grey heron stands in shallow water.\n")
    assert cli(tmp_path, "add", str(folder), "--kb", "notes")[0] == 0
    server = IngestLock(tmp_path / "data", "lorebase serve")
    server.acquire()
    try:
        code, output = cli(tmp_path, "kb", "update", "notes", "--embedder", "tiny", "--reembed")
    finally:
        server.release()
    assert code == 0, output
    assert "another lorebase process is indexing now" in " ".join(output.split())
    notes = kb_json(tmp_path, "notes")
    assert (notes["embedder"], notes["embedder_next"]) == ("small", "tiny")
