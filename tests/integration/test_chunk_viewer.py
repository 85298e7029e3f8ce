"""The chunk viewer: a document's chunks as the index holds them (CLI `docs chunks`, REST),
and a preview of its chunks with other settings, read again from its file and never stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase
from lorebase.cli.main import app
from small_base import small_base, write_files

SECTION = "Travel costs are paid back within thirty days when the receipts are kept. " * 12
GUIDE = "# Guide\n\n" + "".join(f"## Part {n}\n\n{SECTION}\n\n" for n in range(1, 5))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_files(tmp_path / "docs", {"guide.md": GUIDE})


@pytest.fixture
def lb(folder: Path, tmp_path: Path) -> Iterator[Lorebase]:
    with small_base(tmp_path / "data", folder, "handbook") as instance:
        yield instance


def _document_id(lb: Lorebase) -> str:
    return lb.search("travel costs receipts", top_k=1).hits[0].provenance.document_id


def test_the_cli_lists_the_chunks_and_previews_other_settings(lb: Lorebase, folder: Path) -> None:
    base = ["--data-dir", str(lb.settings.data_dir), "--embedder", "fake"]
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == 0, result.output
        return result

    document_id = _document_id(lb)
    held = json.loads(run("docs", "chunks", document_id[:8], "--json").stdout)
    now = held["chunks_now"]
    assert now == len(held["chunks"]) >= 4
    first = held["chunks"][0]
    assert first["trail"][:1] == ["Guide"] and first["embedded"] is True
    assert first["language"] == "en" and first["tokens"] > 0 and "Travel" in first["text"]
    table = run("docs", "chunks", document_id[:8], "--limit", "2").output
    assert "vectors" in table and f"{now} chunks in all" in table

    preview = json.loads(
        run(
            "docs", "chunks", document_id[:8], "--chunk-size", "400", "--overlap", "100", "--json"
        ).stdout
    )
    assert preview["chunks_now"] == now and preview["chunks_with_settings"] > now
    assert preview["chunk_settings"]["chunk_size"] == 400
    assert all(len(chunk["text"]) <= 400 + 100 for chunk in preview["chunks"])
    said = run("docs", "chunks", document_id[:8], "--chunk-size", "400", "--overlap", "0").output
    assert "nothing stored" in said
    # Nothing was stored: the index still holds the chunks it held.
    again = json.loads(run("docs", "chunks", document_id[:8], "--json").stdout)
    assert again["chunks_now"] == now

    (folder / "guide.md").write_text(GUIDE + "\nA new line.\n")
    changed = runner.invoke(app, [*base, "docs", "chunks", document_id[:8], "--overlap", "0"])
    assert changed.exit_code != 0 and "changed since it was indexed" in changed.output


def test_the_api_lists_the_chunks_and_previews_other_settings(lb: Lorebase) -> None:
    client = api_client(create_app(lb, manage=False))
    document_id = _document_id(lb)
    chunks = client.get(f"/v1/documents/{document_id}/chunks", params={"limit": 100}).json()
    assert chunks[0]["embedded"] is True and chunks[0]["tokens"] > 0
    assert chunks[0]["content_kind"] == "prose" and chunks[0]["language"] == "en"
    preview = client.post(
        f"/v1/documents/{document_id}/rechunk-preview", json={"chunk_size": 300, "overlap": 0}
    )
    assert preview.status_code == 200, preview.text
    assert len(preview.json()) > len(chunks)
    assert all(chunk["embedded"] is None for chunk in preview.json())
    bad = client.post(f"/v1/documents/{document_id}/rechunk-preview", json={"chunk_size": 5})
    assert bad.status_code == 422
