"""Resident memory per chunk of a base's in-memory vector index, exact and ANN (usearch graph).

Builds (once, in ``--data-dir``) a store of ``--chunks`` synthetic chunks with 384-d
fake-embedder vectors (``synthetic.bulk_build``), then, in a fresh process per mode, loads the
base's index through the store's own ``DenseIndexes`` and reports the growth of the process's
resident set (VmRSS, after ``malloc_trim``) per chunk, and its parts: the live Python and
numpy bytes (``tracemalloc``: matrix or int8 rows, chunk ids, keys, document codes) and the
usearch graph's own count (``memory_usage``; its file size too). RSS growth also holds what the
allocator kept of the load's temporaries and SQLite's page cache: it varies by a few hundred
bytes per chunk between runs of the same code, so compare the parts.
The ANN mode lowers the threshold to half the chunks so the graph is built at this size (bytes
per chunk hardly depend on the size); the graph is built in the foreground.

Run it with either tree's ``src`` first on ``PYTHONPATH`` to compare two versions.

    python bench/resident.py [--chunks 50000] [--data-dir DIR] [--modes exact,ann]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

import synthetic  # bench/synthetic.py

KB = "bench"
SEED = 11


def rss() -> int:
    """The resident set, after handing freed heap back (glibc keeps it otherwise: the rows
    read while loading would count as the index's)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def measure(db: Path, mode: str, chunks: int) -> dict[str, object]:
    from lorebase.store.ann import import_usearch
    from lorebase.store.sqlite.dense import DenseIndexes

    import_usearch()  # the library's own pages are not the index's
    conn = sqlite3.connect(db)
    kb_id = conn.execute("SELECT id FROM knowledge_bases WHERE name = ?", (KB,)).fetchone()[0]
    identity_id, dim = conn.execute("SELECT id, dim FROM identities").fetchone()
    threshold = max(1, chunks // 2) if mode == "ann" else chunks * 10
    with tempfile.TemporaryDirectory() as folder:
        dense = DenseIndexes(ann_threshold=threshold, ann_folder=Path(folder), ann_background=False)
        query = np.random.default_rng(0).standard_normal(dim).astype(np.float32)
        query /= np.linalg.norm(query)
        gc.collect()
        before = rss()
        tracemalloc.start()
        started = time.perf_counter()
        (index,) = dense.indexes_for(conn, [kb_id], identity_id, dim)
        index.search(query, 50, None)
        load_s = time.perf_counter() - started
        gc.collect()
        live = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        after = rss()
        slot = dense.graph(kb_id, identity_id)
        graph = slot.graph if slot is not None else None
        times = []
        for _ in range(50):
            started = time.perf_counter()
            index.search(query, 50, None)
            times.append((time.perf_counter() - started) * 1000)
    return {
        "mode": mode,
        "chunks": chunks,
        "index": type(index.index).__name__,
        "rss_growth_bytes_per_chunk": round((after - before) / chunks),
        "python_and_numpy_live_bytes_per_chunk": round(live / chunks),
        "graph_memory_usage_bytes_per_chunk": round(graph.memory_usage / chunks) if graph else 0,
        "graph_file_bytes_per_chunk": round(graph.serialized_length / chunks) if graph else 0,
        "load_and_build_s": round(load_s, 1),
        "search_ms_median": round(float(np.median(times)), 2),
        "loadavg": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--modes", default="exact,ann")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    db = args.data_dir / "lorebase.db"
    if args.measure:
        chunks = json.loads((args.data_dir / synthetic.BUILT_MARKER).read_text())["chunks"]
        print(json.dumps(measure(db, args.measure, chunks)))
        return
    if not (args.data_dir / synthetic.BUILT_MARKER).is_file():
        synthetic.bulk_build(db, args.chunks, KB, SEED)
    for mode in args.modes.split(","):
        out = subprocess.run(
            [sys.executable, __file__, "--data-dir", str(args.data_dir), "--measure", mode],
            check=True,
            capture_output=True,
            text=True,
        )
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
