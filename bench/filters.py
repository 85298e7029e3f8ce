"""Filtered hybrid search against unfiltered, on the same synthetic store, in the same run.

The store is ``bench/search.py``'s (synthetic chunks cut from real text, fake-embedder vectors,
built once and kept in ``--data-dir``). Its documents are then given fields as people's
documents have them, written as the product writes them (:func:`lorebase.fields.field_rows`
into ``document_fields``): one to three tags of twenty (a few common, most rare), a date
spread over 2019-2025 and one author of fifty. The queries (Cranfield and CISI questions cut to
2-10 words) run through ``Lorebase.search`` (hybrid, top 10, query embedding included: the fake
embedder) without a filter and with each filter below, interleaved query by query so that load
on the shared machine falls on all alike; the figure is each filter's p50 and p95 and the ratio
of its p95 to the unfiltered p95 (goal: at most 1.5), and its first search (a filter asked
for the first time resolves its documents and makes its masks; later ones reuse them while
the base is unchanged).

    python bench/filters.py [--size 100000] [--queries 100] [--data-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

import search as search_bench  # bench/search.py (the script's folder is first on sys.path)
import synthetic
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.fields import field_rows, parse_condition
from lorebase.settings import ServeSettings, Settings
from lorebase.store.sqlite import SqliteStore

TAGS = [f"topic{n:02d}" for n in range(20)]
TAG_WEIGHTS = np.array([1 / (n + 1) for n in range(20)]) / sum(1 / (n + 1) for n in range(20))
AUTHORS = [f"Author {n:02d}" for n in range(50)]
FILTERS: dict[str, list[str]] = {
    "none": [],
    "common tag (tags=topic00)": ["tags=topic00"],
    "rare tag (tags=topic12)": ["tags=topic12"],
    "date range (date>=2025-01-01)": ["date>=2025-01-01"],
    "author (author=Author 07)": ["author=Author 07"],
    "tag and date (tags=topic01, date<2021)": ["tags=topic01", "date<2021"],
}
FIELDS_MARKER = "fields.json"
WARM_QUERIES = 10


def give_fields(db: Path, seed: int) -> dict[str, Any]:
    """Tags, a date and an author for every document (once per store)."""
    marker = db.parent / FIELDS_MARKER
    if marker.is_file():
        return dict(json.loads(marker.read_text()))
    rng = np.random.default_rng(seed)
    conn = sqlite3.connect(db)
    documents = conn.execute("SELECT id, kb_id FROM documents ORDER BY id").fetchall()
    days = (np.datetime64("2025-12-31") - np.datetime64("2019-01-01")).astype(int)
    rows = []
    for document_id, kb_id in documents:
        tags = rng.choice(TAGS, size=int(rng.integers(1, 4)), replace=False, p=TAG_WEIGHTS)
        day = np.datetime64("2019-01-01") + int(rng.integers(0, days))
        metadata = {
            "tags": tuple(str(t) for t in tags),
            "date": str(day),
            "author": AUTHORS[int(rng.integers(0, len(AUTHORS)))],
        }
        for name, value, folded in field_rows(metadata):
            rows.append((document_id, kb_id, name, folded, value))
    with conn:
        conn.executemany(
            "INSERT OR IGNORE INTO document_fields (document_id, kb_id, field, folded, value) "
            "VALUES (?, ?, ?, ?, ?)",
            rows,
        )
    conn.execute("ANALYZE")
    conn.close()
    info = {"documents": len(documents), "field_rows": len(rows)}
    marker.write_text(json.dumps(info))
    return info


def measure(db: Path, texts: list[str]) -> dict[str, Any]:
    settings = Settings(data_dir=db.parent, serve=ServeSettings(watch=False, workers=1))
    with (
        open_lorebase(settings=settings, embedder=FakeEmbedder(synthetic.DIM)) as lb,
        SqliteStore(db) as other,
    ):
        kb = lb.knowledge_bases()[0]
        conditions = {
            name: tuple(parse_condition(text) for text in given) for name, given in FILTERS.items()
        }
        matched = {  # counted on another store: this one's first filtered search is cold
            name: len(other.matching_documents([kb.id], conditions=wanted)) if wanted else None
            for name, wanted in conditions.items()
        }
        started = time.perf_counter()
        for text in texts[:WARM_QUERIES]:  # opens the keyword index, starts the ANN graph
            lb.search(text, kb=kb.name, top_k=10)
        graph = search_bench.wait_for_graph(lb.store, kb.id, started)  # type: ignore[arg-type]
        times: dict[str, list[float]] = {name: [] for name in FILTERS}
        for text in texts:
            for name, wanted in conditions.items():
                begun = time.perf_counter()
                lb.search(text, kb=kb.name, top_k=10, filters=wanted)
                times[name].append((time.perf_counter() - begun) * 1000)
    unfiltered = search_bench.percentiles(times["none"])
    return {
        "documents": kb.documents,
        "chunks": kb.chunks,
        "graph_seconds": graph,
        "filters": {
            name: {
                "matching_documents": matched[name],
                "first_ms": values[0],
                **search_bench.percentiles(values),
                "p95_ratio": search_bench.percentiles(values)["p95"] / unfiltered["p95"],
            }
            for name, values in times.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data-dir", type=Path, default=search_bench.DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    db, built = search_bench.ensure_store(args.data_dir, args.size, "fake")
    fields = give_fields(db, search_bench.SEED)
    texts = search_bench.queries(args.queries)
    result = {
        "size": args.size,
        "queries": len(texts),
        "load": os.getloadavg()[0],
        "built": built,
        "fields": fields,
        **measure(db, texts),
        "load_after": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{result['chunks']:,} chunks, {result['documents']:,} documents, {len(texts)} queries, "
        f"load {result['load']:.1f} → {result['load_after']:.1f}"
    )
    print(
        f"{'filter':42} {'documents':>10} {'first ms':>8} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p95 ÷ none':>10}"
    )
    for name, row in result["filters"].items():
        count = "all" if row["matching_documents"] is None else f"{row['matching_documents']:,}"
        print(
            f"{name:42} {count:>10} {row['first_ms']:8.1f} {row['p50']:8.1f} {row['p95']:8.1f} "
            f"{row['p95_ratio']:10.2f}"
        )


if __name__ == "__main__":
    main()
