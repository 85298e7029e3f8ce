"""Query latency of keyword, dense and hybrid search at 10k, 100k and 1M chunks, plus bytes per
chunk on disk and in memory.

Stores are built from synthetic chunks cut from real text (see ``bench/synthetic.py``) with
**fake-embedder vectors at 384 dimensions**, or with ``--vectors minilm`` the **bundled
embedder's vectors** of the same chunks (embedded once, ~15-30 chunks/s on 2 cores, cached in
``--data-dir``/vectors so a re-run does not embed again), and kept in ``--data-dir`` so later
runs reuse them. Up to 100k chunks they are written through the product's write path
(``SqliteStore.replace_document``, one transaction per document of 10-50 chunks, vectors and
stored once as int8); the 1M store is written by ``synthetic.bulk_build`` (the
product's row helpers, FTS5 built once at the end), which is ~10x faster.

Each size is measured in a fresh process (so resident-memory growth belongs to that store):
open the store, time the first dense search (it loads the in-memory matrix, or the ANN index),
then run every query in every mode through ``SearchService.search`` (top 10, 50 candidates
per arm, hydration and snippets included). The query vectors are computed before the clock
starts (the fake embedder's, or the bundled embedder's with ``--vectors minilm``), so the main
figures **exclude query embedding**; the bundled embedder's ``embed_query`` is timed apart on
every query and the dense and hybrid figures are also given **with it added**, query by
query. With ``--vectors minilm`` hybrid is also run with the real embedder inside
``SearchService`` ("hybrid, live embedding": the product's path, where the query is embedded
while the keyword arm runs).

Queries: the Cranfield and CISI questions, each cut to its first 2-10 words (seeded), e.g.
"what similarity laws must be obeyed": natural phrasing, so common words like *what* and *how*
stay in, as users type them.

Also measured, per size: the keyword arm's plan against the plain OR-of-terms query on the
same store (latency and top-10 overlap), and dense recall@10 against exact inner product when
an ANN index answers.

    python bench/search.py [--sizes 10000,100000,1000000] [--queries 200] [--data-dir DIR]
                           [--vectors fake|minilm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import synthetic  # bench/synthetic.py: python puts the script's folder first on sys.path
from lorebase.embed.base import Embedder, EmbedderIdentity, EmbedKind
from lorebase.embed.fake import FakeEmbedder
from lorebase.embed.onnx import OnnxEmbedder
from lorebase.search.bounds import Mode
from lorebase.search.query import SearchRequest
from lorebase.search.service import SearchService
from lorebase.stopwords import without_stop_words
from lorebase.store.ann import ANN_THRESHOLD
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.store import SqliteStore
from lorebase.store.vectors import ExactIndex, matrix_from_blobs

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path("/tmp/lorebase-bench-search")
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
KB = "bench"
SEED = 20240601
QUERY_WORDS = (2, 10)
TOP_K = 10
CANDIDATES = 50  # what each arm returns inside SearchService (CANDIDATES there)
MODES = (Mode.KEYWORD, Mode.DENSE, Mode.HYBRID)
GOAL_P95_MS = 30.0
VECTORS = ("fake", "minilm")
EMBEDDED_MODES = (Mode.DENSE, Mode.HYBRID)  # the modes that need the query's vector
ANN_WAIT_SECONDS = 3600


# -- queries -----------------------------------------------------------------------------------
def queries(count: int) -> list[str]:
    """Cranfield then CISI questions, each cut to its first 2-10 words (seeded)."""
    rng = np.random.default_rng(SEED)
    out: list[str] = []
    for name in ("cranfield", "cisi"):
        path = synthetic.SHARED / "ir" / name / "queries.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            words = json.loads(line)["text"].split()
            keep = int(rng.integers(QUERY_WORDS[0], QUERY_WORDS[1] + 1))
            if len(words) >= QUERY_WORDS[0]:
                out.append(" ".join(words[:keep]))
    picked = rng.permutation(len(out))[:count]
    return [out[i] for i in sorted(picked)]


class QueryEmbedder(Embedder):
    """Query vectors computed once up front (by the fake or the bundled embedder), so the
    search clock measures search, not embedding."""

    def __init__(self, vectors: dict[str, np.ndarray], identity: EmbedderIdentity) -> None:
        self._known, self._identity = vectors, identity

    @property
    def identity(self) -> EmbedderIdentity:
        return self._identity

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        return np.stack([self._known[t] for t in texts])


def check_answered(warnings: Sequence[str]) -> None:
    """A search that fell back to keyword (no embedder, another model's vectors) would be
    timed as if it were dense or hybrid: stop instead."""
    fallen = [w for w in warnings if w.startswith(("embedder_", "embedding_"))]
    if fallen:
        sys.exit(f"a search did not run as asked: {fallen[0]}")


def bundled_embedder(data_dir: Path) -> OnnxEmbedder:
    """The product's default embedder (MiniLM, per-channel int8; the quantised model is
    cached in ``data_dir``/models), loaded and warmed up."""
    embedder = OnnxEmbedder(data_dir / "models")
    embedder.embed_query("warm up")
    return embedder


def timed_query_vectors(
    embedder: Embedder, texts: Sequence[str]
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """``embed_query`` of every text, one call each, as a search makes it: vectors and ms."""
    vectors, ms = {}, {}
    for text in texts:
        started = time.perf_counter()
        vectors[text] = embedder.embed_query(text)
        ms[text] = (time.perf_counter() - started) * 1000
    return vectors, ms


def query_vectors(
    kind: str, texts: Sequence[str], bundled: OnnxEmbedder
) -> tuple[dict[str, np.ndarray], EmbedderIdentity, dict[str, float]]:
    """The query vectors searches get (fake or bundled), their identity, and the bundled
    embedder's time per query (measured in both cases: it is what a real search adds)."""
    real, embed_ms = timed_query_vectors(bundled, texts)
    if kind == "minilm":
        return real, bundled.identity, embed_ms
    fake = FakeEmbedder(synthetic.DIM)
    return dict(zip(texts, fake.embed(list(texts), "query"), strict=True)), fake.identity, embed_ms


def store_path(data_dir: Path, size: int, vectors: str) -> Path:
    suffix = "" if vectors == "fake" else f"-{vectors}"
    return data_dir / f"chunks-{size}{suffix}" / "lorebase.db"


def ensure_store(
    data_dir: Path, size: int, vectors: str, rebuild: bool = False, bulk_from: int = 1_000_000
) -> tuple[Path, dict[str, Any]]:
    """The synthetic store of ``size`` chunks with ``vectors``, built when missing; its path
    and build record. MiniLM vectors are embedded first (or read from the cache)."""
    db = store_path(data_dir, size, vectors)
    marker = db.parent / synthetic.BUILT_MARKER
    embedder = bundled_embedder(data_dir) if vectors == "minilm" else None
    if embedder is not None and marker.is_file():
        # A store of another model's (or quantisation's) vectors would answer dense searches
        # with an identity mismatch, i.e. by keyword only: rebuild it.
        rebuild = rebuild or json.loads(marker.read_text()).get("vectors") != embedder.identity.key
    if rebuild or not marker.is_file():
        print(f"building {size} chunks ({vectors} vectors) in {db.parent}", file=sys.stderr)
        if embedder is None:
            (synthetic.bulk_build if size >= bulk_from else synthetic.build)(db, size, KB, SEED)
        else:
            if size >= bulk_from:
                sys.exit("MiniLM vectors are written through replace_document only (< --bulk-from)")
            corpus = synthetic.chunk_corpus(size, SEED)
            cache = synthetic.vectors_cache_file(
                data_dir / "vectors", size, SEED, embedder.identity
            )
            matrix, embed_s = synthetic.minilm_vectors(corpus.texts, cache, embedder)
            info = synthetic.build(db, size, KB, SEED, matrix, embedder.identity)
            info["embed_seconds"] = embed_s  # None: the vectors came from the cache
            marker.write_text(json.dumps(info))
    return db, json.loads(marker.read_text())


# -- measuring (in a fresh process) -------------------------------------------------------------
def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": float(np.percentile(ordered, 50)),
        "p95": float(np.percentile(ordered, 95)),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


def plain_or_search(conn: sqlite3.Connection, kb_id: int, query: str, limit: int) -> list[str]:
    """The keyword arm as first shipped: every term OR-ed, ranked by BM25, one statement. The
    baseline the current plan is compared against (latency and top-10 overlap)."""
    terms = without_stop_words(fts.query_terms(query))
    if not terms:
        return []
    match = " OR ".join(fts.quote_term(t) for t in terms)
    sql = fts.keyword_search_sql(with_documents=False)
    return [row[0] for row in conn.execute(sql, (match, json.dumps([kb_id]), limit))]


def disk_breakdown(db: Path) -> dict[str, int]:
    """Bytes per table family (dbstat), to tell vectors from the cache, text and FTS."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()
    families = {"vectors": 0, "embedding_cache": 0, "chunks": 0, "fts": 0, "documents": 0}
    other = 0
    for name, size in rows:
        if name.startswith("chunks_fts"):
            families["fts"] += size
        elif "embedding_cache" in name:  # stores made before migration 9
            families["embedding_cache"] += size
        elif "vectors" in name or name == "chunks_content_hash":  # the reuse lookup's index
            families["vectors"] += size
        elif "chunks" in name:
            families["chunks"] += size
        elif "documents" in name or "sections" in name:
            families["documents"] += size
        else:
            other += size
    families["other"] = other
    return families


def exact_top(
    db: Path, kb_id: int, vectors: dict[str, np.ndarray], k: int
) -> tuple[dict[str, list[str]], list[float]]:
    """Exact top-k chunk ids per query from the vectors table (the reference for ANN recall),
    and the time of each exact search (the product's ``ExactIndex``, ``CANDIDATES`` rows, as
    the dense arm asks) over the same matrix."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT c.id, v.vector FROM chunks AS c JOIN vectors AS v ON v.chunk_rowid = c.rowid "
        "WHERE c.kb_id = ?",
        (kb_id,),
    )
    ids: list[str] = []
    parts: list[np.ndarray] = []  # decoded as the store decodes them
    while batch := rows.fetchmany(50_000):
        ids.extend(r[0] for r in batch)
        parts.append(matrix_from_blobs([r[1] for r in batch], synthetic.DIM))
    conn.close()
    matrix = np.concatenate(parts)
    index = ExactIndex(matrix)
    out, times = {}, []
    for query, vector in vectors.items():
        started = time.perf_counter()
        positions, _ = index.search(vector, CANDIDATES)
        times.append((time.perf_counter() - started) * 1000)
        out[query] = [ids[i] for i in positions[:k]]
    return out, times


def measure(
    db: Path,
    texts: list[str],
    modes: Sequence[Mode] = MODES,
    vectors_kind: str = "fake",
    data_dir: Path = DEFAULT_DATA,
    lexical: str = "tantivy",
) -> dict[str, Any]:
    """Everything measured on one built store (run in its own process) with one keyword
    engine. Keyword work (the keyword and hybrid modes, the plan comparison) is left out
    unless ``modes`` has it."""
    bundled = bundled_embedder(data_dir)
    known, identity, embed_ms = query_vectors(vectors_kind, texts, bundled)
    embedder = QueryEmbedder(known, identity)
    started = time.perf_counter()
    store = SqliteStore(db, lexical=lexical)  # switching engines drops or rebuilds FTS5
    service = SearchService(store, embedder)
    kb = store.get_kb(KB)
    service.search(SearchRequest(texts[0], (KB,), TOP_K, Mode.KEYWORD))  # a Tantivy build
    lexical_ready_seconds = time.perf_counter() - started
    rss_before = rss_bytes()
    started = time.perf_counter()
    store.dense_search([kb.id], embedder.identity, embedder.embed_query(texts[0]), TOP_K)
    load_seconds = time.perf_counter() - started
    memory: dict[str, Any] = {
        "lexical_ready_seconds": lexical_ready_seconds,
        "dense_load_seconds": load_seconds,
        "rss_growth_bytes": rss_bytes() - rss_before,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    if kb.chunks >= ANN_THRESHOLD:  # the graph builds in the background: wait, then time it
        memory["ann_build_seconds"] = wait_for_graph(store, kb.id, started)
        store.dense_search([kb.id], embedder.identity, embedder.embed_query(texts[1]), TOP_K)
        memory["rss_growth_with_graph_bytes"] = rss_bytes() - rss_before
    latency: dict[str, list[float]] = {str(m): [] for m in modes}
    cpu: dict[str, list[float]] = {str(m): [] for m in modes}
    steps: dict[str, dict[str, list[float]]] = {str(m): {} for m in modes}
    dense_ids: dict[str, list[str]] = {}
    keyword_ids: dict[str, list[str]] = {}
    # With MiniLM vectors, hybrid also runs with the bundled embedder inside the service (the
    # product's path: the query is embedded while the keyword arm runs), in the same loop so
    # that both see the same machine.
    live = SearchService(store, bundled) if vectors_kind == "minilm" else None
    live_ms: list[float] = []
    live_embed_ms: list[float] = []
    if live is not None and Mode.HYBRID in modes:
        live.search(SearchRequest("warm up the live path", (KB,), TOP_K, Mode.HYBRID))
    for text in texts:
        for mode in modes:
            started, cpu_started = time.perf_counter(), time.process_time()
            response = service.search(SearchRequest(text, (KB,), TOP_K, mode))
            latency[str(mode)].append((time.perf_counter() - started) * 1000)
            check_answered(response.warnings)
            cpu[str(mode)].append((time.process_time() - cpu_started) * 1000)
            for step, ms in response.timings_ms.items():
                steps[str(mode)].setdefault(step, []).append(ms)
        if live is not None and Mode.HYBRID in modes:
            started = time.perf_counter()
            response = live.search(SearchRequest(text, (KB,), TOP_K, Mode.HYBRID))
            live_ms.append((time.perf_counter() - started) * 1000)
            live_embed_ms.append(response.timings_ms.get("embed", float("nan")))
    if live is not None:
        live.close()
    # The same searches with the bundled embedder's query time added, query by query.
    with_embedding = {
        str(m): percentiles(
            [ms + embed_ms[t] for ms, t in zip(latency[str(m)], texts, strict=True)]
        )
        for m in modes
        if m in EMBEDDED_MODES
    }
    live_result = (
        {"latency_ms": percentiles(live_ms), "embed_step_ms": percentiles(live_embed_ms)}
        if live_ms
        else {}
    )
    # Arm-level results (not deduplicated) for overlap and recall, outside the timed loop.
    for text in texts:
        vector = embedder.embed_query(text)
        dense_ids[text] = [
            c for c, _ in store.dense_search([kb.id], embedder.identity, vector, TOP_K)
        ]
        if Mode.KEYWORD in modes:
            keyword_ids[text] = [c for c, _ in store.keyword_search([kb.id], text, TOP_K)]
    keyword_plan = (
        compare_keyword_plans(store, db, kb.id, texts, keyword_ids)
        if Mode.KEYWORD in modes and lexical == "fts5"
        else {}
    )
    store.close()
    service.close()
    result: dict[str, Any] = {
        "lexical": lexical,
        "memory": memory,
        "latency_ms": {mode: percentiles(values) for mode, values in latency.items()},
        "vectors": vectors_kind,
        "query_embed_ms": percentiles(list(embed_ms.values())),
        "with_query_embedding_ms": with_embedding,
        "hybrid_live_embedding": live_result,
        "cpu_ms": {mode: percentiles(values) for mode, values in cpu.items()},
        "load_average": os.getloadavg(),
        "steps_ms": {
            mode: {step: percentiles(v) for step, v in by_step.items()}
            for mode, by_step in steps.items()
        },
        "keyword_plan": keyword_plan,
    }
    vectors = {t: embedder.embed_query(t) for t in texts}
    reference, exact_ms = exact_top(db, kb.id, vectors, TOP_K)
    result["exact_dense_ms"] = percentiles(exact_ms)
    result["dense_recall_at_10"] = statistics.fmean(
        len(set(dense_ids[t]) & set(reference[t])) / TOP_K for t in texts
    )
    if kb.chunks >= ANN_THRESHOLD:  # a new process's first search: matrix + saved graph
        started = time.perf_counter()
        with SqliteStore(db) as reopened:
            reopened.dense_search([kb.id], embedder.identity, vectors[texts[0]], TOP_K)
            result["reopen_dense_seconds"] = time.perf_counter() - started
    return result


def wait_for_graph(store: SqliteStore, kb_id: int, started: float) -> float:
    """Seconds from ``started`` until the base's ANN graph holds every row (a side file left
    by an older build may be rebuilt: its presence alone says nothing)."""
    slot = next(
        (s for (k, _), s in store._dense._graphs.items() if k == kb_id),
        None,
    )
    if slot is None or not slot.wait(ANN_WAIT_SECONDS):
        sys.exit("the ANN graph did not finish building")
    return time.perf_counter() - started


def compare_keyword_plans(
    store: SqliteStore, db: Path, kb_id: int, texts: list[str], current: dict[str, list[str]]
) -> dict[str, Any]:
    """The store's keyword arm against the plain OR query on the same store: latency of each
    (arm only, ``CANDIDATES`` rows, as search asks) and top-10 overlap."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    plain_ms: list[float] = []
    store_ms: list[float] = []
    overlap: list[float] = []
    for text in texts:
        started = time.perf_counter()
        plain = plain_or_search(conn, kb_id, text, CANDIDATES)
        plain_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        store.keyword_search([kb_id], text, CANDIDATES)
        store_ms.append((time.perf_counter() - started) * 1000)
        reference = set(plain[:TOP_K])
        if reference:
            overlap.append(len(reference & set(current[text])) / len(reference))
    conn.close()
    return {
        "plain_or_ms": percentiles(plain_ms),
        "store_ms": percentiles(store_ms),
        "top10_overlap_mean": statistics.fmean(overlap) if overlap else 1.0,
        "top10_identical_share": sum(o == 1.0 for o in overlap) / max(1, len(overlap)),
    }


def measure_in_child(
    db: Path, count: int, modes: str, vectors: str, data_dir: Path, lexical: str
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", str(db), "--queries", str(count)]
    out = subprocess.run(
        [
            *command,
            *("--modes", modes, "--vectors", vectors, "--data-dir", str(data_dir)),
            *("--lexical", lexical),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"measuring {db} failed:\n{out.stderr}")
    measured: dict[str, Any] = json.loads(out.stdout)
    return measured


def db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob("lorebase.db*"))


def lexical_bytes(db: Path) -> int:
    """The Tantivy side indexes (and their record) beside the database."""
    folder = db.with_suffix(".lexical")
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rebuild", action="store_true", help="build even when a store exists")
    parser.add_argument(
        "--bulk-from",
        type=int,
        default=1_000_000,
        help="build stores this large with the bulk loader",
    )
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--modes", default=",".join(str(m) for m in MODES))
    parser.add_argument(
        "--vectors",
        choices=VECTORS,
        default="fake",
        help="fake-embedder vectors, or the bundled MiniLM's (embedded once, then cached)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--lexical",
        default="tantivy",
        help="keyword engines to measure, comma-separated (tantivy, fts5), on the same store",
    )
    args = parser.parse_args()
    texts = queries(args.queries)
    modes = [Mode(m) for m in args.modes.split(",")]
    if args.measure:
        print(
            json.dumps(
                measure(args.measure, texts, modes, args.vectors, args.data_dir, args.lexical)
            )
        )
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        db, info = ensure_store(args.data_dir, size, args.vectors, args.rebuild, args.bulk_from)
        for lexical in args.lexical.split(","):
            measured = measure_in_child(
                db, args.queries, args.modes, args.vectors, args.data_dir, lexical
            )
            chunks = info["chunks"]
            breakdown = {k: v / chunks for k, v in disk_breakdown(db).items()}
            breakdown["lexical_side_index"] = (
                lexical_bytes(db) / chunks if lexical == "tantivy" else 0
            )
            results.append(
                {
                    "size": size,
                    "build": info,
                    "disk_bytes_per_chunk": db_bytes(db) / chunks + breakdown["lexical_side_index"],
                    "disk_breakdown_per_chunk": breakdown,
                    "memory_bytes_per_chunk": measured["memory"]["rss_growth_bytes"] / chunks,
                    **measured,
                }
            )
            print(json.dumps(results[-1]), file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print_tables(results)


def print_tables(results: list[dict[str, Any]]) -> None:
    print(
        "| chunks | vectors | mode | p50 ms | p95 ms | max ms | with query embedding p50/p95 ms"
        " | arm p50/p95 ms | hydrate p50 ms | CPU p50/p95 ms |"
    )
    print("|" + " --- |" * 10)
    for r in results:
        for mode in [m for m in MODES if str(m) in r["latency_ms"]]:
            row, used = r["latency_ms"][str(mode)], r["cpu_ms"][str(mode)]
            steps = r["steps_ms"][str(mode)]
            arm = steps.get("dense" if mode is Mode.DENSE else "keyword", {})
            embedded = r["with_query_embedding_ms"].get(str(mode))
            cells = [
                f"{r['size']:,}",
                r["vectors"],
                f"{mode} ({r['lexical']})",
                f"{row['p50']:.1f}",
                f"{row['p95']:.1f}",
                f"{row['max']:.1f}",
                f"{embedded['p50']:.1f}/{embedded['p95']:.1f}" if embedded else "-",
                f"{arm.get('p50', 0):.1f}/{arm.get('p95', 0):.1f}",
                f"{steps['hydrate']['p50']:.1f}",
                f"{used['p50']:.1f}/{used['p95']:.1f}",
            ]
            print("| " + " | ".join(cells) + " |")
        live = r["hybrid_live_embedding"]
        if live:
            row, embed = live["latency_ms"], live["embed_step_ms"]
            print(
                f"| {r['size']:,} | {r['vectors']} | hybrid, live embedding | {row['p50']:.1f} | "
                f"{row['p95']:.1f} | {row['max']:.1f} | (embed step {embed['p50']:.1f}/"
                f"{embed['p95']:.1f}) | | | |"
            )
    print()
    for r in results:
        q = r["query_embed_ms"]
        print(
            f"- {r['size']:,}: bundled embedder, one query: p50 {q['p50']:.1f} ms, "
            f"p95 {q['p95']:.1f} ms; load average {r['load_average']}"
        )
    print()
    print(
        "| chunks | disk B/chunk | memory B/chunk | dense load s | exact dense p50/p95 ms | "
        "recall@10 | plain OR p50/p95 ms | store keyword p50/p95 ms | top-10 overlap |"
    )
    print("|" + " --- |" * 9)
    for r in results:
        exact = r["exact_dense_ms"]
        none = {"p50": float("nan"), "p95": float("nan")}
        plan = r["keyword_plan"] or {
            "plain_or_ms": none,
            "store_ms": none,
            "top10_overlap_mean": float("nan"),
        }
        print(
            f"| {r['size']:,} | {r['disk_bytes_per_chunk']:.0f} | "
            f"{r['memory_bytes_per_chunk']:.0f} | {r['memory']['dense_load_seconds']:.2f} | "
            f"{exact['p50']:.1f}/{exact['p95']:.1f} | {r['dense_recall_at_10']:.3f} | "
            f"{plan['plain_or_ms']['p50']:.1f}/{plan['plain_or_ms']['p95']:.1f} | "
            f"{plan['store_ms']['p50']:.1f}/{plan['store_ms']['p95']:.1f} | "
            f"{plan['top10_overlap_mean']:.3f} |"
        )
    for r in [r for r in results if str(Mode.HYBRID) in r["latency_ms"]]:
        hybrid = r["latency_ms"][str(Mode.HYBRID)]["p95"]
        verdict = "meets" if hybrid <= GOAL_P95_MS else "misses"
        print(f"- {r['size']:,}: hybrid p95 {hybrid:.1f} ms {verdict} the {GOAL_P95_MS} ms goal")


if __name__ == "__main__":
    main()
