"""Ranking kept by stored vector forms: float16 and int8 against exact float32, on real MiniLM
vectors of the shared Cranfield and CISI sets, plus the speed of exact search per in-memory
dtype at 100k x 384.

Each corpus record (title and text, as ``lorebase eval`` writes it) and each query is embedded
once with the bundled embedder (``OnnxEmbedder``, per-channel int8 model; vectors cached under
``--cache``). Queries stay float32; only the document vectors are stored in each form, decoded,
and searched exactly (inner product). Reported per set and form: recall@10 and nDCG@10 against
the qrels, and the overlap of each form's top 10 with float32's (how much of the ranking a
form keeps, whatever the judgments say).

Forms:

- ``float16``: IEEE half precision, 2 bytes a dimension.
- ``int8/vector``: one scale per vector, ``q = round(x * 127 / max|x|)``; decoded as
  ``q * s`` with ``s = 1 / ||q||`` (what the store keeps: the decoded vector is unit length, so
  inner products stay cosines). 1 byte a dimension + 4 bytes of scale.
- ``int8/vector-maxabs``: the same codes decoded as ``q * max|x| / 127`` (not renormalised).
- ``int8/dimension``: one scale per dimension from the corpus' max ``|x_d|`` (needs statistics
  of a whole base, so a store would have to re-encode when they drift).

    python bench/quantize.py [--cache DIR] [--speed-rows 5000,100000] [--skip-speed] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lorebase.eval.datasets import document_text, iter_corpus, load_qrels, load_queries
from lorebase.eval.metrics import ndcg_at_k, recall_at_k
from lorebase.store.vectors import decode_int8, encode_int8, inner_products, top_k

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "ir"
SETS = ("cranfield", "cisi")
K = 10


def embeddings(name: str, cache: Path) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Corpus ids and vectors, query ids and vectors of one set (embedded once, then cached)."""
    folder = DATA / name
    records = list(iter_corpus(folder / "corpus.jsonl"))
    queries = load_queries(folder / "queries.jsonl")
    doc_ids = [r[0] for r in records]
    query_ids = list(queries)
    stored = cache / f"{name}.npz"
    if stored.is_file():
        saved = np.load(stored)
        return doc_ids, saved["docs"], query_ids, saved["queries"]
    from lorebase.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(cache / "models")
    start = time.perf_counter()
    docs = embedder.embed_documents([document_text(title, text) for _, title, text in records])
    asked = embedder.embed_query  # one at a time, as a search embeds it
    query_vectors = np.stack([asked(queries[q]) for q in query_ids])
    print(
        f"{name}: embedded {len(records)} documents, {len(query_ids)} queries "
        f"in {time.perf_counter() - start:.0f} s"
    )
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(stored, docs=docs, queries=query_vectors)
    return doc_ids, np.asarray(docs, np.float32), query_ids, query_vectors.astype(np.float32)


def forms(docs: np.ndarray) -> dict[str, np.ndarray]:
    """Each stored form of the document vectors, decoded to float32 for search."""
    codes, scales = encode_int8(docs)
    maxabs = np.abs(docs).max(axis=1, keepdims=True) / 127
    per_dim = np.abs(docs).max(axis=0, keepdims=True) / 127
    dim_codes = np.clip(np.rint(docs / per_dim), -127, 127)
    return {
        "float32": docs,
        "float16": docs.astype(np.float16).astype(np.float32),
        "int8/vector": decode_int8(codes, scales),
        "int8/vector-maxabs": codes.astype(np.float32) * maxabs,
        "int8/dimension": (dim_codes * per_dim).astype(np.float32),
    }


def ranking(matrix: np.ndarray, queries: np.ndarray, doc_ids: list[str]) -> list[list[str]]:
    return [[doc_ids[p] for p in top_k(inner_products(matrix, q), K)[0]] for q in queries]


def evaluate(name: str, cache: Path) -> dict[str, Any]:
    doc_ids, docs, query_ids, queries = embeddings(name, cache)
    qrels = load_qrels(DATA / name / "qrels" / "test.tsv")
    judged = [i for i, q in enumerate(query_ids) if any(g > 0 for g in qrels.get(q, {}).values())]
    reference = ranking(docs, queries[judged], doc_ids)
    out: dict[str, Any] = {"documents": len(doc_ids), "queries": len(judged), "forms": {}}
    for form, matrix in forms(docs).items():
        ranked = ranking(matrix, queries[judged], doc_ids)
        relevance = [qrels[query_ids[i]] for i in judged]
        out["forms"][form] = {
            "recall@10": statistics.fmean(
                recall_at_k(r, rel, K) for r, rel in zip(ranked, relevance, strict=True)
            ),
            "ndcg@10": statistics.fmean(
                ndcg_at_k(r, rel, K) for r, rel in zip(ranked, relevance, strict=True)
            ),
            "overlap@10": statistics.fmean(
                len(set(r) & set(ref)) / K for r, ref in zip(ranked, reference, strict=True)
            ),
            "max_cosine_error": float(
                np.abs(
                    (matrix * docs).sum(1) / np.maximum(np.linalg.norm(matrix, axis=1), 1e-12) - 1
                ).max()
            ),
        }
    return out


def speed(rows: int, dim: int = 384, repeat: int = 40) -> dict[str, float]:
    """Median ms of one exact query (scores + top 50, as the dense arm asks) per in-memory
    form, on one thread; the forms take turns, so a busy machine slows them alike."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((rows, dim)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    half = base.astype(np.float16)
    query = base[1].copy()
    codes, scales = encode_int8(base)
    query_codes = encode_int8(query)[0][0]
    candidates: dict[str, Callable[[], object]] = {
        "float32": lambda: top_k(inner_products(base, query), 50),
        "float16": lambda: top_k(np.einsum("ij,j->i", half, query.astype(np.float16)), 50),
        "int8, cast to float32 in einsum": lambda: top_k(
            np.einsum("ij,j->i", codes, query, dtype=np.float32) * scales, 50
        ),
        "int8 x int8 query, int32 sums": lambda: top_k(
            np.einsum("ij,j->i", codes, query_codes, dtype=np.int32) * scales, 50
        ),
    }
    times: dict[str, list[float]] = {label: [] for label in candidates}
    for run in candidates.values():
        run()
    for _ in range(repeat):
        for label, run in candidates.items():
            start = time.perf_counter()
            run()
            times[label].append((time.perf_counter() - start) * 1000)
    return {label: round(statistics.median(values), 2) for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=REPO / "bench" / "results" / "quantize")
    parser.add_argument("--speed-rows", default="5000,100000")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"loadavg_start": os.getloadavg()}
    result["sets"] = {name: evaluate(name, args.cache) for name in SETS}
    if not args.skip_speed:
        result["speed_ms"] = {int(rows): speed(int(rows)) for rows in args.speed_rows.split(",")}
    result["loadavg_end"] = os.getloadavg()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, entry in result["sets"].items():
        print(f"\n{name}: {entry['documents']} documents, {entry['queries']} judged queries")
        print(f"{'form':<22}{'recall@10':>10}{'nDCG@10':>9}{'overlap@10':>11}{'max cos err':>12}")
        for form, m in entry["forms"].items():
            print(
                f"{form:<22}{m['recall@10']:>10.4f}{m['ndcg@10']:>9.4f}"
                f"{m['overlap@10']:>11.3f}{m['max_cosine_error']:>12.2e}"
            )
    if "speed_ms" in result:
        for rows, speeds in result["speed_ms"].items():
            print(f"\nexact search, {rows} x 384, median ms per query (top 50):")
            for label, ms in speeds.items():
                print(f"  {label:<34}{ms:>8.2f}")
    print(f"\nload average: {result['loadavg_start']} -> {result['loadavg_end']}")


if __name__ == "__main__":
    main()
