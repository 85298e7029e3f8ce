"""`lorebase check`, `vacuum`, `backup` and `restore` through the CLI, on real SQLite files
in the test's folder with the fake embedder: a truncated keyword segment is found and mended
with the same search results, a damaged database gives a report (never a traceback), an
altered upload is named, deletes show as reclaimable bytes a vacuum gives back, a backup
taken while another process writes restores to the same results, and a restore never runs
over a process holding the data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import pytest
from typer.testing import CliRunner, Result

from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings

# Whole data directories indexed, backed up, restored and damaged: seconds a test, so left to
# `make test` (the fast lane stays under a minute).
pytestmark = pytest.mark.slow

runner = CliRunner()
PAGE_SIZE = 16384
"""The store's page size (lorebase.store.sqlite.database.PAGE_SIZE)."""
QUERIES = ("vacation policy days", "budget spreadsheet report", "gamma delta")


class Cli(Protocol):
    def __call__(self, *args: str, data: Path | None = None) -> Result: ...


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def cli(data: Path) -> Cli:
    def invoke(*args: str, data: Path | None = None) -> Result:
        where = data if data is not None else default
        return runner.invoke(app, ["--data-dir", str(where), "--embedder", "fake", *args])

    default = data
    return invoke


def write_notes(folder: Path, count: int, stem: str = "d") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (folder / f"{stem}{number}.md").write_text(
            f"# Note {number}\n\nVacation policy {number}: employees get {number} days. Alpha "
            f"beta gamma delta {number}.\n\n## Money\n\nBudget spreadsheet quarterly report "
            f"item {number}.\n"
        )
    return folder


@pytest.fixture
def indexed(cli: Cli, tmp_path: Path) -> Path:
    notes = write_notes(tmp_path / "notes", 24)
    result = cli("add", str(notes), "--kb", "notes")
    assert result.exit_code == 0, result.output
    return notes


def results(cli: Cli, data: Path | None = None) -> list[list[str]]:
    """The top chunks of each query, in order."""
    found = []
    for query in QUERIES:
        args = ["search", query, "--kb", "notes", "--json", "--top-k", "5"]
        result = cli(*args) if data is None else cli(*args, data=data)
        assert result.exit_code == 0, result.output
        found.append([hit["chunk_id"] for hit in json.loads(result.stdout)["hits"]])
    return found


def check_json(cli: Cli, *args: str, data: Path | None = None) -> tuple[int, dict[str, Any]]:
    result = cli("check", "--json", *args) if data is None else cli("check", "--json", data=data)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, json.loads(result.stdout)


def test_a_sound_data_directory_checks_clean(cli: Cli, indexed: Path) -> None:
    code, report = check_json(cli)
    assert (code, report["ok"], report["findings"]) == (0, True, [])
    result = cli("check")
    assert result.exit_code == 0 and result.output.startswith("ok")


def test_a_truncated_segment_is_found_and_repaired_with_the_same_results(
    cli: Cli, indexed: Path, data: Path
) -> None:
    before = results(cli)
    segments = [p for p in (data / "lorebase.lexical" / "kb1").iterdir() if p.is_file()]
    largest = max(segments, key=lambda p: p.stat().st_size)
    os.truncate(largest, largest.stat().st_size // 2)

    result = cli("check")
    assert result.exit_code == 1
    assert "keyword index of base notes" in result.output
    code, report = check_json(cli)
    assert code == 1 and not report["ok"]
    (finding,) = report["remaining"]
    assert (finding["area"], finding["kb"], finding["repairable"]) == (
        "keyword_index",
        "notes",
        True,
    )

    repaired = cli("check", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt the derived indexes of notes" in repaired.output
    assert check_json(cli)[0] == 0
    assert results(cli) == before


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_database_gives_a_report_not_a_traceback(
    cli: Cli, indexed: Path, data: Path, damage: str
) -> None:
    assert cli("vacuum").exit_code == 0  # no free pages: the middle page is in use
    database = data / "lorebase.db"
    size = database.stat().st_size
    if damage == "truncate":
        os.truncate(database, size // 2)
    else:  # the middle page's first bytes (its b-tree header) flipped
        middle = size // 2 - size // 2 % PAGE_SIZE
        with database.open("r+b") as handle:
            handle.seek(middle)
            block = handle.read(64)
            handle.seek(middle)
            handle.write(bytes(b ^ 0xFF for b in block))
    code, report = check_json(cli)
    assert code == 1 and not report["ok"]
    assert any(f["area"] == "database" for f in report["remaining"])
    result = cli("check")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "database" in result.output


def test_an_altered_original_names_its_document(cli: Cli, data: Path) -> None:
    with open_lorebase(data, embedder=FakeEmbedder()) as lb:
        kb = lb.ensure_kb("inbox")
        kept, _ = lb.upload(kb, "kept.md", [b"# Kept\n\nA wren sings.\n"])
        altered, _ = lb.upload(kb, "altered.md", [b"# Altered\n\nA heron waits.\n" * 40])
    blob = data / "blobs" / altered.id
    raw = bytearray(blob.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    blob.write_bytes(bytes(raw))
    code, report = check_json(cli)
    assert code == 1
    (finding,) = report["remaining"]
    assert (finding["area"], finding["kb"], finding["document_id"]) == (
        "original",
        "inbox",
        altered.id,
    )
    assert kept.id not in finding["problem"] and "heron" not in finding["problem"]
    assert altered.id in cli("check").output


def test_deletes_show_as_reclaimable_bytes_a_vacuum_gives_back(
    cli: Cli, indexed: Path, data: Path
) -> None:
    for path in sorted(indexed.iterdir())[:18]:
        path.unlink()
    assert cli("sync").exit_code == 0
    results(cli)  # the keyword index caught up with the deletes
    reclaimable = json.loads(cli("status", "--json").stdout)["reclaimable_bytes"]
    assert reclaimable > 0
    result = cli("vacuum", "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done["after_bytes"] < done["before_bytes"]
    assert json.loads(cli("status", "--json").stdout)["reclaimable_bytes"] < reclaimable
    assert check_json(cli)[0] == 0


def test_a_backup_taken_while_another_lorebase_writes_restores_the_same_results(
    cli: Cli, indexed: Path, data: Path, tmp_path: Path
) -> None:
    before = results(cli)
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        settings = Settings.from_env(data)
        with open_lorebase(settings=settings, embedder=FakeEmbedder(), holder="writer") as lb:
            round_ = 0
            while not stop.is_set():
                folder = write_notes(tmp_path / f"scratch{round_}", 6, stem=f"s{round_}-")
                lb.add([folder], kb="scratch")
                written.append(round_)
                round_ += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while not written:  # the writer is under way
            stop.wait(0.05)
        backup = tmp_path / "backup"
        made = cli("backup", str(backup), "--json")
        assert made.exit_code == 0, made.output
    finally:
        stop.set()
        thread.join()
    manifest = json.loads((backup / "manifest.json").read_text())
    paths = {entry["path"] for entry in manifest["files"]}
    assert "lorebase.db" in paths and "manifest.json" not in paths
    assert any(path.startswith("lorebase.lexical/kb1/") for path in paths)
    assert all(len(entry["sha256"]) == 64 for entry in manifest["files"])

    fresh = tmp_path / "restored"
    restored = cli("restore", str(backup), data=fresh)
    assert restored.exit_code == 0, restored.output
    assert results(cli, fresh) == before
    code, report = check_json(cli, data=fresh)
    assert code == 0, report


def test_backup_refuses_a_folder_with_files_in_it(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "other.txt").write_text("mine")
    result = cli("backup", str(taken))
    assert result.exit_code == 4 and "not an empty folder" in result.output
    assert sorted(p.name for p in taken.iterdir()) == ["other.txt"]


def test_restore_verifies_the_manifest_and_refuses_a_directory_with_data(
    cli: Cli, indexed: Path, data: Path, tmp_path: Path
) -> None:
    backup = tmp_path / "backup"
    assert cli("backup", str(backup)).exit_code == 0
    assert cli("restore", str(backup)).exit_code == 4  # over the data directory itself
    database = backup / "lorebase.db"
    original = database.read_bytes()
    database.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    fresh = tmp_path / "fresh"
    result = cli("restore", str(backup), data=fresh)
    assert result.exit_code == 2 and "lorebase.db" in result.output
    assert not fresh.exists()
    database.write_bytes(original)
    assert cli("restore", str(backup), "--replace").exit_code == 0
    assert check_json(cli)[0] == 0


def test_restoring_a_backup_without_its_key_in_place_keeps_the_key(
    cli: Cli, data: Path, tmp_path: Path
) -> None:
    """A backup made with --no-key restored over its own data directory: the only copy of
    the data key stays, and every upload's original still opens."""
    with open_lorebase(data, embedder=FakeEmbedder()) as lb:
        lb.upload(lb.ensure_kb("inbox"), "kept.md", [b"# Kept\n\nA wren sings.\n"])
    key = (data / "data.key").read_bytes()
    backup = tmp_path / "backup"
    assert cli("backup", str(backup), "--no-key").exit_code == 0
    assert not (backup / "data.key").exists()
    assert cli("restore", str(backup), "--replace").exit_code == 0
    assert (data / "data.key").read_bytes() == key
    assert check_json(cli)[0] == 0


def test_restore_is_refused_while_a_process_holds_the_data_directory(
    cli: Cli, indexed: Path, data: Path, tmp_path: Path
) -> None:
    backup = tmp_path / "backup"
    assert cli("backup", str(backup)).exit_code == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom lorebase.lock import IngestLock\n"
            f"IngestLock(Path({str(data)!r}), 'lorebase serve').acquire()\n"
            "print('held', flush=True)\nsys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = cli("restore", str(backup), "--replace")
        assert result.exit_code == 4
        assert f"lorebase process {holder.pid} (lorebase serve)" in result.output
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    assert cli("restore", str(backup), "--replace").exit_code == 0


def test_a_saved_ann_graph_of_another_dimension_is_found_and_removed(
    cli: Cli, indexed: Path, data: Path
) -> None:
    graphs = data / "lorebase.ann"
    graphs.mkdir()
    for stem, dim in (("kb1-identity1", 999), ("kb99-identity1", 8)):
        (graphs / f"{stem}.json").write_text(json.dumps({"dim": dim, "generation": 1}))
        (graphs / f"{stem}.usearch").write_bytes(b"\0" * 64)
    code, report = check_json(cli)
    assert code == 1
    found = {(f["area"], f["kb"]) for f in report["remaining"]}
    assert found == {("vector_index", "notes"), ("vector_index", None)}
    assert all(f["repairable"] for f in report["remaining"])
    assert any("dimension 999" in f["problem"] for f in report["remaining"])
    assert cli("check", "--repair").exit_code == 0
    assert list(graphs.iterdir()) == []
