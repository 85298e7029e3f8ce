"""Chunk texts stored compressed (SQLite) travel in an export as text: a SQLite base holding
compressed rows and a row an older lorebase wrote (TEXT) exports, imports into another data
directory, and holds the same documents, chunks and results there, its long texts compressed
again; ``lorebase vacuum`` compresses the older rows in place."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

from integration.test_export_import import contents, open_sqlite

SENTENCES = (
    "Glacier meltwater feeds the valley rivers each spring; the ice retreats a little more. ",
    "Größere Gletscher schmelzen langsamer — 氷河 — und die Überwachung dauert Jahre. ",
    "Copper smelting needs a furnace hotter than a thousand degrees, fed day and night. ",
)


def _corpus(root: Path) -> Path:
    root.mkdir(parents=True)
    for n, sentence in enumerate(SENTENCES):
        (root / f"note-{n}.md").write_text(f"# Note {n}\n\n{sentence * 12}\n\n## Short\n\nok\n")
    return root


def _types(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT typeof(text) FROM chunks ORDER BY id")]
    finally:
        conn.close()


def _decompress_one(db: Path) -> None:
    """One compressed chunk row written back as an older lorebase stored it (TEXT)."""
    conn = sqlite3.connect(db)
    try:
        rowid, blob = conn.execute(
            "SELECT rowid, text FROM chunks WHERE typeof(text) = 'blob' ORDER BY rowid LIMIT 1"
        ).fetchone()
        text = zlib.decompress(blob).decode()
        conn.execute("UPDATE chunks SET text = ? WHERE rowid = ?", (text, rowid))
        conn.commit()
    finally:
        conn.close()


def test_an_export_of_compressed_and_older_rows_imports_whole(tmp_path: Path) -> None:
    source = tmp_path / "source"
    with open_sqlite(source) as lb:
        lb.add([_corpus(tmp_path / "corpus")], kb="notes")
    assert {"blob", "text"} <= set(_types(source / "lorebase.db"))
    _decompress_one(source / "lorebase.db")
    with open_sqlite(source) as lb:
        held = contents(lb, "notes")
        found = lb.search("gletscher überwachung", kb="notes", top_k=3, mode="keyword").hits
        assert found and "Gletscher" in found[0].text
        lb.export_kb("notes", tmp_path / "notes.zip", originals=False)
    with open_sqlite(tmp_path / "target") as lb:
        lb.import_kb(tmp_path / "notes.zip")
        assert contents(lb, "notes") == held
        again = lb.search("gletscher überwachung", kb="notes", top_k=3, mode="keyword").hits
        assert [(h.provenance.path, h.text) for h in again] == [
            (h.provenance.path, h.text) for h in found
        ]
    target_types = _types(tmp_path / "target" / "lorebase.db")
    assert target_types.count("blob") == _types(source / "lorebase.db").count("blob") + 1


def test_vacuum_compresses_rows_an_older_lorebase_wrote(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_sqlite(data) as lb:
        lb.add([_corpus(tmp_path / "corpus")], kb="notes")
    before = _types(data / "lorebase.db")
    _decompress_one(data / "lorebase.db")
    assert _types(data / "lorebase.db").count("blob") == before.count("blob") - 1
    with open_sqlite(data) as lb:
        held = contents(lb, "notes")
        done = lb.vacuum()
        assert any("compressed" in step for step in done.steps)
        assert contents(lb, "notes") == held
        hits = lb.search("copper furnace", kb="notes", top_k=3, mode="keyword").hits
        assert hits and "Copper" in hits[0].text
    assert _types(data / "lorebase.db") == before
