"""Bytes per chunk on disk, per table and index (``dbstat``), of a store written through the
product's write path (``bench/synthetic.py``: chunks cut from real text, 384-d fake-embedder
vectors, one transaction per document).

Run it with either tree's ``src`` first on ``PYTHONPATH`` to compare two versions of the
schema on the same chunks.

    python bench/disk.py [--chunks 10000] [--data-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import zlib
from pathlib import Path

import synthetic  # bench/synthetic.py: python puts the script's folder first on sys.path


def utf8_length(stored: str | bytes) -> int:
    """A chunk's text's UTF-8 bytes, whether its row keeps it compressed (a zlib BLOB, since
    migration 21) or not: written out here so that an older tree's ``src`` runs this too."""
    if isinstance(stored, bytes):
        return len(zlib.decompress(stored))
    return len(stored.encode("utf-8"))


def per_object(db: Path) -> dict[str, int]:
    """Bytes of every table and index, largest first."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return dict(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.data_dir or Path(scratch)
        db = folder / "lorebase.db"
        info = synthetic.build(db, args.chunks, "bench", seed=7)
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stored_bytes = conn.execute(
            "SELECT sum(length(CAST(text AS BLOB))) FROM chunks"
        ).fetchone()[0]
        text_bytes = sum(utf8_length(text) for (text,) in conn.execute("SELECT text FROM chunks"))
        conn.close()
        sizes = per_object(db)
        chunks = info["chunks"]
        result = {
            "chunks": chunks,
            "file_bytes_per_chunk": db.stat().st_size / chunks,
            "chunk_text_bytes_per_chunk": text_bytes / chunks,
            "stored_chunk_text_bytes_per_chunk": stored_bytes / chunks,
            "per_chunk": {name: size / chunks for name, size in sizes.items()},
            "loadavg": os.getloadavg(),
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{chunks} chunks; file {result['file_bytes_per_chunk']:.0f} B/chunk; chunk text "
        f"{result['chunk_text_bytes_per_chunk']:.0f} B/chunk, stored as "
        f"{result['stored_chunk_text_bytes_per_chunk']:.0f}"
    )
    for name, size in result["per_chunk"].items():
        print(f"  {name:<40}{size:>9.1f}")
    print(f"load average: {result['loadavg']}")


if __name__ == "__main__":
    main()
