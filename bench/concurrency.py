"""Searches while a pass writes, and searches side by side: latency against the idle store.

A store of synthetic chunks (the deterministic fake embedder, so the model's cost does not
hide the store's) answers hybrid searches from 1 and from 8 threads while idle; then again
from 1 thread while `Lorebase.add` indexes a second folder into the same base in another
thread — the situation of a server whose folders change while people search. A third folder
of the same size, indexed with nobody searching, tells what the searches cost the pass. The
figures that matter are the ratios in one run: p95 during the pass / p95 idle, 8-thread
throughput / 1-thread throughput, and the pass's time with / without searches.

    python bench/concurrency.py [--chunks 20000] [--incoming 400] [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings
from serve import WORDS, corpus, percentile, run_clients  # bench/serve.py


def during(
    call: Callable[[str], object], queries: list[str], busy: threading.Thread
) -> dict[str, float]:
    """One client searching back to back for as long as ``busy`` runs."""
    latencies: list[float] = []
    busy.start()
    while busy.is_alive() or not latencies:
        started = time.perf_counter()
        call(queries[len(latencies) % len(queries)])
        latencies.append(time.perf_counter() - started)
    busy.join()
    return {
        "searches": len(latencies),
        "p50 ms": statistics.median(latencies) * 1000,
        "p95 ms": percentile(latencies, 0.95) * 1000,
        "max ms": max(latencies) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--incoming", type=int, default=400, help="files the pass indexes")
    parser.add_argument("--requests", type=int, default=200, help="searches per idle client")
    args = parser.parse_args()
    rng = random.Random(5)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(500)]
    with tempfile.TemporaryDirectory() as tmp:
        root, incoming, alone = (Path(tmp) / name for name in ("docs", "incoming", "alone"))
        for folder, chunks in (
            (root, args.chunks),
            (incoming, args.incoming * 10),
            (alone, args.incoming * 10),
        ):
            folder.mkdir()
            corpus(folder, chunks, rng)
        lb = open_lorebase(settings=Settings(data_dir=Path(tmp) / "data"), embedder=FakeEmbedder())
        lb.add([root], kb="bench")
        started = time.perf_counter()
        lb.add([alone], kb="bench")
        alone_seconds = time.perf_counter() - started

        def search(query: str) -> None:
            lb.search(query, kb="bench")

        one = run_clients(search, queries, 1, args.requests)
        eight = run_clients(search, queries, 8, args.requests // 4)
        started = time.perf_counter()
        writer = threading.Thread(target=lb.add, args=([incoming],), kwargs={"kb": "bench"})
        busy = during(search, queries, writer)
        busy["pass seconds"] = time.perf_counter() - started
        lb.close()
    result = {
        "chunks": args.chunks,
        "idle, 1 client": one,
        "idle, 8 clients": eight,
        "during a pass, 1 client": busy,
        "pass seconds, nobody searching": alone_seconds,
        "p95 during the pass / idle": busy["p95 ms"] / one["p95 ms"],
        "pass time with searches / without": busy["pass seconds"] / alone_seconds,
        "throughput 8 clients / 1": eight["requests/s"] / one["requests/s"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
