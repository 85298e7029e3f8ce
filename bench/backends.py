"""The two storage backends side by side, same corpus, same queries, one run: the embedded
SQLite file and PostgreSQL + pgvector.

Three parts (``--parts``, default all):

- ``quality``: nDCG@10 (and MRR@10, recall@100) per mode on the BEIR sets in
  ``../shared/data/ir`` with the bundled MiniLM, indexed as ``lorebase eval`` indexes them
  (``prepare_beir`` + ``run_task``), into a SQLite data directory and into a PostgreSQL
  database of its own. The model runs once per text: both backends share one embedder that
  remembers every vector it made (the second backend embeds nothing), so both index exactly
  the same vectors.
- ``latency``: keyword, dense and hybrid search at 10k and 100k synthetic chunks
  (``bench/synthetic.py``: real sentences, fake-embedder vectors at 384 dimensions, the same
  documents written through each store's ``replace_document``), ``SearchService.search`` (top
  10, hydration and snippets included) with the query vectors made before the clock: the
  store is measured, not the model. The backends and modes are interleaved query by query so
  that both see the same machine. ``--explain`` also prints ``EXPLAIN (ANALYZE, BUFFERS)`` of
  PostgreSQL's slowest keyword and dense statements.
- ``ingest``: ``Lorebase.add`` of the same folder of synthetic Markdown documents into a fresh
  SQLite data directory and a fresh PostgreSQL database, fake embedder (384 dimensions),
  alternated ``--repeat`` times.

    python bench/backends.py [--parts quality,latency,ingest] [--sizes 10000,100000]
                             [--queries 100] [--pg-admin URL] [--data-dir DIR]
                             [--explain] [--json FILE]

Without ``--pg-admin`` (a superuser URL to the ``postgres`` database) a throwaway PostgreSQL
18 + pgvector is started (``tests/postgres_server.py``); with it, databases named
``lbbench_*`` are made there once and reused by later runs, as the SQLite stores in
``--data-dir`` are. Every figure is printed with the load average at the time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import synthetic  # bench/synthetic.py
from lorebase.app import build_embedder, open_lorebase
from lorebase.embed.base import Embedder, EmbedderIdentity, EmbedKind
from lorebase.embed.fake import FakeEmbedder
from lorebase.eval.runner import EvalConfig, run_task
from lorebase.eval.tasks import prepare_beir
from lorebase.search.bounds import Mode
from lorebase.search.query import SearchRequest
from lorebase.search.service import SearchService
from lorebase.settings import Settings
from lorebase.store.base import Store
from lorebase.store.postgres import dense, lexical
from lorebase.store.postgres.store import PostgresStore
from lorebase.store.sqlite.store import SqliteStore
from lorebase.vault.keys import DataKey

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
DEFAULT_DATA = Path("/tmp/lorebase-bench-backends")
KB = "bench"
SEED = 20240601  # bench/search.py's: the same synthetic documents
TOP_K = 10
MODES = (Mode.KEYWORD, Mode.DENSE, Mode.HYBRID)
BACKENDS = ("sqlite", "postgres")
QUALITY_GOAL = 0.02
LATENCY_GOAL_RATIO = 2.0
INGEST_DOCUMENTS = 150
WORK_MEMS = ("64MB",)
VECTOR_LITERAL = re.compile(r"'\[[-0-9.e,]*\]'")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


# -- PostgreSQL ------------------------------------------------------------------------------
@contextlib.contextmanager
def postgres_admin(url: str | None) -> Iterator[str]:
    """A superuser URL to the ``postgres`` database: the one given, or a throwaway server's."""
    if url:
        yield url
        return
    sys.path.insert(0, str(REPO / "tests"))
    import postgres_server

    with postgres_server.running(tcp=False) as server:
        yield server.admin_url


def database_url(admin_url: str, name: str, *, fresh: bool = False) -> str:
    """The URL of database ``name`` of the admin's server, created when missing (dropped and
    made again with ``fresh``), with the store's extensions."""
    import psycopg

    head, _, tail = admin_url.partition("?")
    url = f"{head.rpartition('/')[0]}/{name}" + (f"?{tail}" if tail else "")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(url, autocommit=True) as conn:
        for extension in ("vector", "unaccent"):
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    return url


# -- quality -----------------------------------------------------------------------------------
class MemoEmbedder(Embedder):
    """Another embedder that makes each (text, kind) vector once: the second backend indexed
    and queried with it embeds nothing, and gets the very same vectors."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.memo: dict[tuple[str, str], np.ndarray] = {}
        self.computed = 0

    @property
    def identity(self) -> EmbedderIdentity:
        return self.inner.identity

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (t, kind) not in self.memo))
        if missing:
            for text, vector in zip(missing, self.inner.embed_batch(missing, kind), strict=True):
                self.memo[(text, kind)] = vector
            self.computed += len(missing)
        return np.stack([self.memo[(t, kind)] for t in texts])


def quality(admin: str, data_dir: Path, sets: Sequence[str], key: DataKey) -> dict[str, Any]:
    base = Settings(data_dir=data_dir / "quality-settings")
    inner = build_embedder(base.embed, base.model_cache)
    assert inner is not None
    out: dict[str, Any] = {}
    for name in sets:
        memo = MemoEmbedder(inner)
        out[name] = {}
        for backend in BACKENDS:
            folder = data_dir / "quality" / backend / name
            if backend == "sqlite":
                settings = Settings(data_dir=folder)
            else:
                url = database_url(admin, f"lbbench_eval_{name}", fresh=True)
                settings = Settings(data_dir=folder, store_url=url)
            computed_before = memo.computed
            with open_lorebase(settings=settings, embedder=memo, data_key=key) as lb:
                started = time.perf_counter()
                task = prepare_beir(lb, IR / name)
                indexed = time.perf_counter() - started
                result = run_task(lb, task, EvalConfig(ks=(10, 100)))
            out[name][backend] = {
                "index_s": round(indexed, 1),
                "texts_embedded": memo.computed - computed_before,
                "chunks": task.index.chunks if task.index else None,
                "load": load(),
                "modes": {
                    m.mode: {
                        "ndcg@10": m.metrics["ndcg@10"],
                        "mrr@10": m.metrics["mrr@10"],
                        "recall@100": m.metrics["recall@100"],
                        "latency_ms": m.latency_ms,
                    }
                    for m in result.modes
                },
            }
            print(f"quality {name} {backend}: {json.dumps(out[name][backend])}", file=sys.stderr)
    return out


# -- building the synthetic stores ---------------------------------------------------------------
_POOL: list[synthetic.Pool] = []


def pool() -> synthetic.Pool:
    if not _POOL:
        _POOL.append(synthetic.sentence_pool(FakeEmbedder(synthetic.DIM)))
    return _POOL[0]


def sqlite_store(data_dir: Path, size: int) -> tuple[Path, dict[str, Any]]:
    db = data_dir / f"sqlite-{size}" / "lorebase.db"
    marker = db.parent / synthetic.BUILT_MARKER
    if not marker.is_file():
        print(f"building {size} chunks into SQLite {db}", file=sys.stderr)
        info = synthetic.build(db, size, KB, SEED)
        info["load"] = load()
        marker.write_text(json.dumps(info))
    return db, json.loads(marker.read_text())


def postgres_store(admin: str, size: int) -> tuple[str, dict[str, Any]]:
    """The same documents (same seed) through ``PostgresStore.replace_document``."""
    import psycopg

    url = database_url(admin, f"lbbench_chunks_{size}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_built (info jsonb)")
        row = conn.execute("SELECT info FROM bench_built").fetchone()
    if row is not None:
        return url, dict(row[0])
    url = database_url(admin, f"lbbench_chunks_{size}", fresh=True)
    print(f"building {size} chunks into PostgreSQL", file=sys.stderr)
    fake = FakeEmbedder(synthetic.DIM)
    with PostgresStore(url) as store:
        kb = store.create_kb(KB)
        store.set_kb_identity(kb.id, fake.identity)
        settings_key = kb.chunk_settings.key
        started = time.perf_counter()
        written = made = 0
        for doc in synthetic.documents(pool(), size, SEED + size):
            store.replace_document(
                kb.id, doc.document, doc.chunks, doc.vectors, fake.identity, settings_key
            )
            made += 1
            written += len(doc.chunks)
            if made % 500 == 0:
                rate = written / (time.perf_counter() - started)
                print(f"  postgres {size}: {written} chunks, {rate:.0f}/s", file=sys.stderr)
        seconds = time.perf_counter() - started
    info = {
        "loader": "replace_document (product write path)",
        "chunks": written,
        "documents": made,
        "write_seconds": seconds,
        "write_chunks_per_s": written / seconds,
        "load": load(),
    }
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_built (info jsonb)")
        conn.execute("INSERT INTO bench_built VALUES (%s)", (json.dumps(info),))
    return url, info


# -- latency -------------------------------------------------------------------------------------
def latency(
    admin: str, data_dir: Path, sizes: Sequence[int], count: int, explain: bool
) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "bench"))
    from search import QueryEmbedder, queries  # bench/search.py

    texts = queries(count)
    out: dict[str, Any] = {}
    for size in sizes:
        db, sqlite_info = sqlite_store(data_dir, size)
        url, postgres_info = postgres_store(admin, size)
        fake = FakeEmbedder(synthetic.DIM)  # the stores' vectors are the fake's
        vectors = fake.embed_batch(texts, "query")
        embedder = QueryEmbedder(dict(zip(texts, vectors, strict=True)), fake.identity)
        stores: dict[str, Store] = {"sqlite": SqliteStore(db), "postgres": PostgresStore(url)}
        services = {name: SearchService(store, embedder) for name, store in stores.items()}
        for service in services.values():  # untimed: the dense matrix, caches, pools
            for mode in MODES:
                service.search(SearchRequest(texts[0], (KB,), TOP_K, mode))
        times: dict[str, dict[str, list[float]]] = {b: {str(m): [] for m in MODES} for b in stores}
        steps: dict[str, dict[str, dict[str, list[float]]]] = {
            b: {str(m): {} for m in MODES} for b in stores
        }
        load_before = load()
        for n, text in enumerate(texts):
            order = BACKENDS if n % 2 == 0 else BACKENDS[::-1]
            for mode in MODES:
                for backend in order:
                    started = time.perf_counter()
                    response = services[backend].search(SearchRequest(text, (KB,), TOP_K, mode))
                    times[backend][str(mode)].append((time.perf_counter() - started) * 1000)
                    for step, ms in response.timings_ms.items():
                        steps[backend][str(mode)].setdefault(step, []).append(ms)
        entry: dict[str, Any] = {
            "build": {"sqlite": sqlite_info, "postgres": postgres_info},
            "load_before": load_before,
            "load_after": load(),
            "queries": len(texts),
        }
        for backend in stores:
            entry[backend] = {
                mode: {
                    "p50": pct(values, 50),
                    "p95": pct(values, 95),
                    "steps": {
                        s: {"p50": pct(v, 50), "p95": pct(v, 95)}
                        for s, v in steps[backend][mode].items()
                    },
                }
                for mode, values in times[backend].items()
            }
        if explain:
            pg = stores["postgres"]
            assert isinstance(pg, PostgresStore)
            slowest = sorted(
                range(len(texts)),
                key=lambda i: steps["postgres"]["hybrid"].get("keyword", [0.0] * len(texts))[i],
            )[-3:]
            entry["explain"] = explain_postgres(pg, [texts[i] for i in slowest], embedder)
        out[str(size)] = entry
        print(f"latency {size}: {json.dumps(entry)[:3000]}", file=sys.stderr)
        for store in stores.values():
            store.close()
    return out


def explain_postgres(store: PostgresStore, texts: Sequence[str], embedder: Embedder) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the keyword statement and of the dense statements (count,
    HNSW candidates, re-rank) for the given queries, as the store runs them."""
    kb = store.get_kb(KB)
    reports: list[str] = []
    with store.database.read() as conn:
        identity_id, dim = conn.execute("SELECT id, dim FROM identities LIMIT 1").fetchone()
    for text in texts:
        terms = lexical.query_terms(text, ["en"])
        sql, params = lexical.keyword_query("bm25", terms, [kb.id], 50, None)
        with store.database.read() as conn:
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
        head = f"-- keyword: {text!r} ({len(terms)} terms)"
        reports.append(head + "\n" + "\n".join(r[0] for r in plan))
        for work_mem in WORK_MEMS:  # the same statement with room to sort and hash in memory
            with store.database.read() as conn:
                conn.execute(f"SET LOCAL work_mem = '{work_mem}'")
                plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
            lines = [r[0] for r in plan if "Execution Time" in r[0] or "Disk" in r[0]]
            reports.append(f"{head} with work_mem {work_mem}:\n" + "\n".join(lines))
        vector = embedder.embed_query(text)
        n = dense.candidates(50)
        params = {"kbs": [kb.id], "query": vector, "n": n}
        with store.database.read() as conn:
            lines = [f"-- dense: {text!r}"]
            capped = {"kbs": [kb.id], "cap": store.exact_search_rows + 1}
            for row in conn.execute("EXPLAIN ANALYZE " + dense.count_sql(identity_id), capped):
                lines.append("count | " + row[0])
            rows = conn.execute(dense.count_sql(identity_id), capped).fetchone()[0]
            if rows > store.exact_search_rows:
                for setting in dense.hnsw_settings_sql(n):
                    conn.execute(setting)
                sql = dense.hnsw_candidates_sql(identity_id, dim)
                for row in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params):
                    lines.append("hnsw | " + row[0])
                seqs = [r[0] for r in conn.execute(sql, params)]
                conn.execute(dense.after_hnsw_sql())
            else:
                sql = dense.exact_candidates_sql(identity_id, with_documents=False)
                for row in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params):
                    lines.append("exact | " + row[0])
                seqs = [r[0] for r in conn.execute(sql, params)]
            rerank = {"seqs": seqs, "query": vector, "limit": 50}
            for row in conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS) " + dense.rerank_sql(identity_id), rerank
            ):
                lines.append("rerank | " + row[0])
        reports.append("\n".join(lines))
    return reports


# -- ingest ----------------------------------------------------------------------------------------
def ingest_folder(root: Path, documents: int) -> tuple[int, int]:
    """``documents`` synthetic documents as Markdown files (title, sections with headings)."""
    marker = root.with_suffix(".json")  # beside the folder: lorebase would try to index it
    if marker.is_file():
        documents, total_bytes = json.loads(marker.read_text())
        return int(documents), int(total_bytes)
    root.mkdir(parents=True, exist_ok=True)
    total_bytes = 0
    for doc in synthetic.documents(pool(), 10**9, SEED + 7):
        number = int(doc.document.path.rsplit("-", 1)[1].split(".")[0])
        if number >= documents:
            break
        lines = [f"# {doc.document.title}", ""]
        trail: tuple[str, ...] = ()
        for chunk in doc.chunks:
            if chunk.position.trail != trail:
                trail = chunk.position.trail
                lines += [f"## {trail[0]}", ""]
            lines += [chunk.text, ""]
        text = "\n".join(lines)
        (root / f"doc-{number:05d}.md").write_text(text, encoding="utf-8")
        total_bytes += len(text.encode())
    marker.write_text(json.dumps([documents, total_bytes]))
    return documents, total_bytes


def ingest(admin: str, data_dir: Path, repeat: int, key: DataKey) -> dict[str, Any]:
    root = data_dir / "ingest-docs"
    documents, size = ingest_folder(root, INGEST_DOCUMENTS)
    out: dict[str, Any] = {"documents": documents, "bytes": size, "runs": []}
    for run in range(repeat):
        order = BACKENDS if run % 2 == 0 else BACKENDS[::-1]
        for backend in order:
            with tempfile.TemporaryDirectory() as tmp:
                if backend == "sqlite":
                    settings = Settings(data_dir=Path(tmp))
                else:
                    url = database_url(admin, "lbbench_ingest", fresh=True)
                    settings = Settings(data_dir=Path(tmp), store_url=url)
                embedder = FakeEmbedder(synthetic.DIM)
                with open_lorebase(settings=settings, embedder=embedder, data_key=key) as lb:
                    load_before = load()
                    started = time.perf_counter()
                    cpu = time.process_time()
                    report = lb.add([root], kb="ingest")
                    seconds = time.perf_counter() - started
                    cpu_seconds = time.process_time() - cpu
                    chunks = lb.store.get_kb("ingest", totals=True).chunks
            row = {
                "backend": backend,
                "run": run,
                "seconds": seconds,
                "chunks": chunks,
                "chunks_per_s": chunks / seconds,
                "documents_per_s": documents / seconds,
                "process_cpu_s": cpu_seconds,
                "failed": len(report.failed),
                "load_before": load_before,
                "load_after": load(),
            }
            out["runs"].append(row)
            print(f"ingest: {json.dumps(row, default=str)}", file=sys.stderr)
    return out


# -- report --------------------------------------------------------------------------------------
def print_report(figures: dict[str, Any]) -> None:
    if "quality" in figures:
        print("\n| set | mode | SQLite nDCG@10 | PostgreSQL nDCG@10 | difference | goal ±0.02 |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, by_backend in figures["quality"].items():
            for mode in (str(m) for m in MODES):
                a = by_backend["sqlite"]["modes"][mode]["ndcg@10"]
                b = by_backend["postgres"]["modes"][mode]["ndcg@10"]
                verdict = "meets" if abs(a - b) <= QUALITY_GOAL else "MISSES"
                print(f"| {name} | {mode} | {a:.4f} | {b:.4f} | {b - a:+.4f} | {verdict} |")
        print(
            "\n| set | backend | index s | texts embedded | MRR@10 k/d/h | recall@100 k/d/h "
            "| load |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, by_backend in figures["quality"].items():
            for backend, row in by_backend.items():
                modes = row["modes"]
                mrr = " / ".join(f"{modes[str(m)]['mrr@10']:.3f}" for m in MODES)
                rec = " / ".join(f"{modes[str(m)]['recall@100']:.3f}" for m in MODES)
                print(
                    f"| {name} | {backend} | {row['index_s']} | {row['texts_embedded']} | "
                    f"{mrr} | {rec} | {row['load']} |"
                )
    if "latency" in figures:
        print(
            "\n| chunks | mode | SQLite p50 / p95 ms | PostgreSQL p50 / p95 ms | "
            "PG/SQLite p95 | PG keyword arm p50/p95 | PG dense arm p50/p95 | "
            "PG hydrate p50 | load before → after |"
        )
        print("|" + " --- |" * 9)
        for size, entry in figures["latency"].items():
            for mode in (str(m) for m in MODES):
                s, p = entry["sqlite"][mode], entry["postgres"][mode]
                kw = p["steps"].get("keyword", {"p50": float("nan"), "p95": float("nan")})
                de = p["steps"].get("dense", {"p50": float("nan"), "p95": float("nan")})
                hy = p["steps"].get("hydrate", {"p50": float("nan")})
                print(
                    f"| {int(size):,} | {mode} | {s['p50']:.1f} / {s['p95']:.1f} | "
                    f"{p['p50']:.1f} / {p['p95']:.1f} | {p['p95'] / s['p95']:.2f} | "
                    f"{kw['p50']:.1f}/{kw['p95']:.1f} | {de['p50']:.1f}/{de['p95']:.1f} | "
                    f"{hy['p50']:.1f} | {entry['load_before']} → {entry['load_after']} |"
                )
        for size, entry in figures["latency"].items():
            ratio = entry["postgres"]["hybrid"]["p95"] / entry["sqlite"]["hybrid"]["p95"]
            verdict = "meets" if ratio <= LATENCY_GOAL_RATIO else "MISSES"
            print(f"- {int(size):,}: PostgreSQL/SQLite hybrid p95 {ratio:.2f} ({verdict} ≤ 2)")
            for backend in BACKENDS:
                build = entry["build"][backend]
                print(
                    f"  - {backend} build: {build['chunks']} chunks, "
                    f"{build['write_chunks_per_s']:.0f} chunks/s (replace_document)"
                )
            for report in entry.get("explain", []):
                print("\n```\n" + VECTOR_LITERAL.sub("'[…]'", report) + "\n```")
    if "ingest" in figures:
        ing = figures["ingest"]
        print(f"\ningest: {ing['documents']} documents, {ing['bytes']} bytes")
        print(
            "| run | backend | chunks | s | chunks/s | documents/s | CPU s (this process) | load |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in ing["runs"]:
            print(
                f"| {r['run']} | {r['backend']} | {r['chunks']} | {r['seconds']:.1f} | "
                f"{r['chunks_per_s']:.0f} | {r['documents_per_s']:.1f} | "
                f"{r['process_cpu_s']:.1f} | {r['load_before']} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="quality,latency,ingest")
    parser.add_argument("--sets", nargs="+", default=["cranfield", "cisi"])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="ingest runs per backend")
    parser.add_argument("--pg-admin", help="superuser URL to a server's postgres database")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    key = DataKey.generate()
    figures: dict[str, Any] = {"load_start": load()}
    with postgres_admin(args.pg_admin) as admin:
        if "ingest" in parts:
            figures["ingest"] = ingest(admin, args.data_dir, args.repeat, key)
        if "latency" in parts:
            sizes = [int(s) for s in args.sizes.split(",")]
            figures["latency"] = latency(admin, args.data_dir, sizes, args.queries, args.explain)
        if "quality" in parts:
            figures["quality"] = quality(admin, args.data_dir, args.sets, key)
    figures["load_end"] = load()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1, default=str))
    print_report(figures)
    print(f"\nload average at start {figures['load_start']}, at end {figures['load_end']}")


if __name__ == "__main__":
    main()
