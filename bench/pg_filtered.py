"""Dense search over pgvector filtered by knowledge base: recall@10 against the exact answer.

Three bases share one embedding identity (one partial HNSW index): a big one, a mid-size one
above the exact-scan threshold (searched through the graph with pgvector's iterative scan, the
filter dropping most of what the graph visits) and a small one (scanned exactly). Vectors are
clustered (a Gaussian mixture, unit length) like sentence embeddings, not uniform noise; the
queries are perturbed corpus vectors. Recall@10 is measured against numpy's exact inner-product
top 10 over the same base's float32 vectors, with latency p50/p95 of ``dense_search``.

    python bench/pg_filtered.py [--big 100000] [--mid 30000] [--small 5000] [--queries 200]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import postgres_server
from lorebase.embed.base import EmbedderIdentity
from lorebase.settings import ChunkSettings
from lorebase.store.base import NewDocument
from lorebase.store.postgres.store import PostgresStore
from lorebase.types import Chunk, ContentKind, Position

DIM = 384
PER_DOCUMENT = 200
IDENTITY = EmbedderIdentity(model="mixture", digest="c" * 64, dim=DIM)


def mixture(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    picks = rng.integers(0, len(centres), count)
    vectors: np.ndarray = centres[picks] + rng.normal(0, 0.35, (count, DIM)) / np.sqrt(DIM) * 4
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit.astype(np.float32)


def fill(store: PostgresStore, kb_id: int, vectors: np.ndarray, name: str) -> list[str]:
    """Documents of PER_DOCUMENT chunks; returns the stored chunk id of each vector, in order."""
    from lorebase.store import stored_chunk_id

    ids: list[str] = []
    for start in range(0, len(vectors), PER_DOCUMENT):
        part = vectors[start : start + PER_DOCUMENT]
        chunks = []
        for ordinal in range(len(part)):
            text = f"{name} chunk {start + ordinal}"
            digest = hashlib.sha256(text.encode()).hexdigest()
            chunks.append(
                Chunk(
                    id=digest[:32],
                    ordinal=ordinal,
                    text=text,
                    embed_text=text,
                    tokens=3,
                    content_hash=digest,
                    position=Position(
                        trail=(), start=0, end=len(text), content_kind=ContentKind.PROSE
                    ),
                )
            )
        record = store.replace_document(
            kb_id,
            NewDocument(path=f"{name}/{start}.txt", kind="text", size=1, content_hash=name),
            chunks,
            part,
            IDENTITY,
            ChunkSettings().key,
        )
        ids += [stored_chunk_id(record.id, c.id) for c in chunks]
    return ids


def measure(
    store: PostgresStore, kb_id: int, ids: list[str], vectors: np.ndarray, queries: np.ndarray
) -> dict[str, float]:
    recalls, times = [], []
    for query in queries:
        started = time.perf_counter()
        found = store.dense_search([kb_id], IDENTITY, query, 10)
        times.append((time.perf_counter() - started) * 1000)
        truth = {ids[i] for i in np.argsort(-(vectors @ query))[:10]}
        recalls.append(len(truth & {chunk_id for chunk_id, _ in found}) / 10)
    times.sort()
    return {
        "recall@10": statistics.mean(recalls),
        "p50_ms": times[len(times) // 2],
        "p95_ms": times[int(len(times) * 0.95)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--mid", type=int, default=30_000)
    parser.add_argument("--small", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=200)
    options = parser.parse_args()
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(300, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    sets = {
        "big": mixture(rng, options.big, centres),
        "mid": mixture(rng, options.mid, centres),
        "small": mixture(rng, options.small, centres),
    }
    with postgres_server.running() as server:
        store = PostgresStore(server.new_database("bench"))
        try:
            started = time.perf_counter()
            placed = {}
            for name, vectors in sets.items():
                kb = store.create_kb(name)
                placed[name] = (kb.id, fill(store, kb.id, vectors, name))
            build = time.perf_counter() - started
            total = sum(len(v) for v in sets.values())
            print(f"{total} vectors in {build:.0f} s; load {os.getloadavg()[0]:.1f}")
            print("| base | vectors | path | recall@10 | p50 ms | p95 ms |")
            print("| --- | --- | --- | --- | --- | --- |")
            for name, vectors in sets.items():
                kb_id, ids = placed[name]
                picks = rng.integers(0, len(vectors), options.queries)
                queries = vectors[picks] + rng.normal(0, 0.02, (options.queries, DIM))
                queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(
                    np.float32
                )
                path = "exact scan" if len(vectors) <= store.exact_search_rows else "HNSW"
                result = measure(store, kb_id, ids, vectors, queries)
                print(
                    f"| {name} | {len(vectors)} | {path} | {result['recall@10']:.3f} | "
                    f"{result['p50_ms']:.1f} | {result['p95_ms']:.1f} |"
                )
            print(f"load after: {os.getloadavg()[0]:.1f}")
        finally:
            store.close()


if __name__ == "__main__":
    main()
