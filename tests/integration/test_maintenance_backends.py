"""Check, vacuum and backup through the service on both stores: a sound lorebase (folders and
an upload) checks clean, the space deletes left is reported, and a backup is written (SQLite)
or refused with the pg_dump advice (PostgreSQL), from the library and from the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from integration.store_backends import StoreBackend
from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import Unsupported


def test_check_vacuum_and_backup_on_each_store(backend: StoreBackend, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for number in range(8):
        (notes / f"n{number}.md").write_text(f"# Note {number}\n\nA wren sings {number}.\n")
    settings = backend.settings(tmp_path / "data")
    key = backend.data_key()
    with open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=key) as lb:
        lb.add([notes], kb="notes")
        inbox = lb.ensure_kb("inbox")
        lb.upload(inbox, "heron.md", [b"# Heron\n\nA heron waits.\n"])
        report = lb.check()
        assert report.ok and report.findings == [], report.findings
        assert set(report.names.values()) == {"notes", "inbox"}
        notes_id = lb.kb("notes").id
        assert lb.check([notes_id]).ok
        for path in sorted(notes.iterdir())[:5]:
            path.unlink()
        lb.sync("notes")
        assert lb.reclaimable().estimated is backend.postgres
        assert lb.vacuum().steps
        folder = tmp_path / "backup"
        if backend.postgres:
            with pytest.raises(Unsupported) as refused:
                lb.backup(folder)
            advice = str(refused.value)
            assert "pg_dump" in advice and "LOREBASE_DATA_KEY" in advice
            assert not folder.exists()
        else:
            made = lb.backup(folder)
            assert made.files >= 3 and (folder / "blobs").is_dir()
        assert lb.check().ok

    if backend.postgres:
        result = CliRunner().invoke(
            app,
            [
                "--data-dir",
                str(tmp_path / "data"),
                "--embedder",
                "fake",
                "backup",
                str(tmp_path / "x"),
            ],
            env=backend.environ(),
        )
        assert result.exit_code == 5 and "pg_dump" in result.output
        assert not (tmp_path / "x").exists()
