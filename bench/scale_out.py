"""lorebase past one process, over one PostgreSQL database: ingest throughput with 1, 2 and 4
``lorebase worker`` processes, and search throughput with 1 and 2 ``lorebase serve
--no-ingest`` processes under concurrent HTTP clients. CPU time is sampled per process (from
``/proc``) so that what limits each figure can be read: PostgreSQL (its postmaster and every
backend it started, live or exited), the lorebase processes, and this script's clients.

- **ingest**: for each worker count, a fresh database; ``--documents`` synthetic Markdown
  uploads of a few chunks each are queued first (``Lorebase.upload`` into the jobs table, no
  worker running), then N ``lorebase worker --workers 1`` processes are started (fake
  embedder) and timed until the jobs table is empty. "from launch" includes the processes'
  start; "steady" runs from the first finished job to the last.
- **search**: a base of ``--chunks`` synthetic chunks (``bench/synthetic.py`` text, written
  through ``PostgresStore.replace_document`` with the CLI's fake-embedder vectors), then 1 and
  2 ``serve --no-ingest --no-auth`` processes on 127.0.0.1, ``--clients`` client threads in
  this process, each sending ``--requests`` hybrid searches (top 10) round-robin over the
  processes.

    python bench/scale_out.py [--workers 1,2,4] [--documents 400] [--serves 1,2]
                              [--chunks 10000] [--clients 16] [--requests 20]
                              [--pg-admin URL] [--json FILE]

Children run ``python -m lorebase`` with ``PYTHONPATH`` set to this checkout's ``src``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

import local_server  # bench/local_server.py (the script's folder is first on sys.path)
import synthetic  # bench/synthetic.py
from backends import database_url, load, pct, postgres_admin  # bench/backends.py
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.store.postgres.store import PostgresStore
from lorebase.store.states import Scope
from lorebase.vault.keys import DataKey

if TYPE_CHECKING:
    import psycopg

REPO = Path(__file__).resolve().parents[1]
SEED = 424242
TICKS = os.sysconf("SC_CLK_TCK")
READY_SECONDS = 90.0


# -- CPU accounting ------------------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """User + system CPU of a process (plus that of its reaped children)."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    used = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        used += int(fields[13]) + int(fields[14])  # cutime, cstime
    return used / TICKS


def postgres_cpu(postmaster: int) -> float:
    """The whole server: the postmaster, its exited children, and every live child."""
    total = cpu_seconds(postmaster, children=True)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == postmaster:
                total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def one_row(conn: psycopg.Connection[tuple[Any, ...]], sql: str) -> tuple[Any, ...]:
    """The one row ``sql`` returns."""
    row = conn.execute(sql).fetchone()
    assert row is not None, sql
    return row


def postmaster_pid(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        backend = int(one_row(conn, "SELECT pg_backend_pid()")[0])
        fields = _stat(backend)  # while the backend lives
    assert fields is not None
    return int(fields[1])


class CpuMeter:
    """CPU seconds used between :meth:`start` and :meth:`stop` by PostgreSQL, by the given
    lorebase processes (with their reaped children: extraction workers), and by this one."""

    def __init__(self, postmaster: int, pids: Sequence[int]) -> None:
        self.postmaster, self.pids = postmaster, list(pids)

    def sample(self) -> dict[str, float]:
        return {
            "postgres": postgres_cpu(self.postmaster),
            "lorebase": sum(self._tree(p) for p in self.pids),
            "bench": time.process_time(),
            "wall": time.perf_counter(),
        }

    def _tree(self, pid: int) -> float:
        total = cpu_seconds(pid, children=True)
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = _stat(int(entry))
                if fields is not None and int(fields[1]) == pid:
                    total += (int(fields[11]) + int(fields[12])) / TICKS
        return total

    def start(self) -> None:
        self.begin = self.sample()

    def stop(self) -> dict[str, float]:
        end = self.sample()
        wall = end["wall"] - self.begin["wall"]
        out = {k: end[k] - self.begin[k] for k in ("postgres", "lorebase", "bench")}
        # In cores: 2.0 means both of this machine's cores all the time.
        return {**{f"{k}_cpu_s": v for k, v in out.items()}} | {
            f"{k}_cores": v / wall for k, v in out.items()
        }


# -- processes -----------------------------------------------------------------------------------
def child_env(url: str, key: DataKey) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO / "src"),
        LOREBASE_STORE=url,
        LOREBASE_DATA_KEY=key.to_base64(),
        LOREBASE_EMBEDDER="fake",
    )
    return env


def lorebase(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lorebase", "--data-dir", str(home), *args]


def stop_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# -- ingest --------------------------------------------------------------------------------------
def upload_texts(count: int) -> list[tuple[str, bytes]]:
    """``count`` Markdown files: a title and three sections of one synthetic chunk's text each
    (100-300 words), i.e. a few chunks per file once lorebase chunks it."""
    pool = synthetic.sentence_pool(FakeEmbedder(synthetic.DIM))
    rng = np.random.default_rng(SEED)
    files = []
    for n in range(count):
        doc = synthetic.make_document(pool, n, rng)
        sections = [f"## {c.position.trail[0]}\n\n{c.text}" for c in doc.chunks[:3]]
        text = f"# {doc.document.title}\n\n" + "\n\n".join(sections) + "\n"
        files.append((f"note-{n:05d}.md", text.encode("utf-8")))
    return files


def ingest_run(
    admin: str, postmaster: int, workers: int, files: list[tuple[str, bytes]], key: DataKey
) -> dict[str, Any]:
    import psycopg

    url = database_url(admin, f"lbscale_ingest_{workers}", fresh=True)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp) / "queue",
            store_url=url,
            serve=ServeSettings(queue_size=len(files) + 10),
        )
        with open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=key) as lb:
            kb = lb.create_kb("ingest")
            for name, data in files:
                lb.upload(kb, name, [data])
        with psycopg.connect(url, autocommit=True) as conn:
            queued = int(one_row(conn, "SELECT count(*) FROM jobs")[0])
            env = child_env(url, key)
            load_before = load()
            launched = time.perf_counter()
            processes = [
                subprocess.Popen(
                    lorebase(Path(tmp) / f"worker{n}", "worker", "--workers", "1"),
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=(Path(tmp) / f"worker{n}.log").open("wb"),
                )
                for n in range(workers)
            ]
            meter = CpuMeter(postmaster, [p.pid for p in processes])
            meter.start()
            first_done = None
            left = queued
            try:
                while left:
                    time.sleep(0.05)
                    left = int(one_row(conn, "SELECT count(*) FROM jobs")[0])
                    if first_done is None and left < queued:
                        first_done = (time.perf_counter(), queued - left)
                    if any(p.poll() is not None for p in processes):
                        log = (Path(tmp) / "worker0.log").read_text(errors="replace")
                        sys.exit(f"a worker exited:\n{log[-3000:]}")
                finished = time.perf_counter()
                cpu = meter.stop()
            finally:
                stop_all(processes)
            row = one_row(
                conn,
                "SELECT count(*) FILTER (WHERE state = 'indexed'), count(*), "
                "coalesce(sum(chunk_count), 0) FROM documents",
            )
            indexed, documents, chunks = int(row[0]), int(row[1]), int(row[2])
    assert first_done is not None
    steady_s = finished - first_done[0]
    steady_docs = indexed - first_done[1]
    seconds = finished - launched
    return {
        "workers": workers,
        "documents": documents,
        "indexed": indexed,
        "chunks": chunks,
        "seconds_from_launch": seconds,
        "documents_per_s": indexed / seconds,
        "chunks_per_s": chunks / seconds,
        "first_job_done_s": first_done[0] - launched,
        "steady_documents_per_s": steady_docs / steady_s,
        "steady_chunks_per_s": steady_docs * (chunks / max(1, indexed)) / steady_s,
        "load_before": load_before,
        "load_after": load(),
        **cpu,
    }


# -- search --------------------------------------------------------------------------------------
def search_base(admin: str, chunks: int) -> tuple[str, dict[str, Any]]:
    """A database holding one global base of ``chunks`` synthetic chunks with the CLI's
    fake-embedder vectors (reused by later runs)."""
    import psycopg

    name = f"lbscale_search_{chunks}"
    url = database_url(admin, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_built (info jsonb)")
        row = conn.execute("SELECT info FROM bench_built").fetchone()
    if row is not None:
        return url, dict(row[0])
    url = database_url(admin, name, fresh=True)
    embedder = FakeEmbedder()  # what `--embedder fake` (LOREBASE_EMBEDDER=fake) builds
    pool = synthetic.sentence_pool(FakeEmbedder(synthetic.DIM))
    started = time.perf_counter()
    with PostgresStore(url) as store:
        kb = store.create_kb("search", scope=Scope.GLOBAL)
        store.set_kb_identity(kb.id, embedder.identity)
        for doc in synthetic.documents(pool, chunks, SEED):
            vectors = embedder.embed_documents([c.embed_text for c in doc.chunks])
            store.replace_document(
                kb.id,
                doc.document,
                doc.chunks,
                vectors,
                embedder.identity,
                kb.chunk_settings.key,
            )
    info = {"chunks": chunks, "build_s": time.perf_counter() - started, "load": load()}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_built (info jsonb)")
        conn.execute("INSERT INTO bench_built VALUES (%s)", (json.dumps(info),))
    return url, info


def search_run(
    url: str,
    postmaster: int,
    serves: int,
    texts: list[str],
    clients: int,
    requests: int,
    key: DataKey,
) -> dict[str, Any]:
    env = child_env(url, key)
    with tempfile.TemporaryDirectory() as tmp:
        processes, bases = [], []
        for n in range(serves):
            port = local_server.free_port()
            command = lorebase(
                Path(tmp) / f"serve{n}", "serve", "--port", str(port), "--no-ingest", "--no-auth"
            )
            log = (Path(tmp) / f"serve{n}.log").open("wb")
            processes.append(
                subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
            )
            bases.append(f"http://127.0.0.1:{port}")
        try:
            for base, process in zip(bases, processes, strict=True):
                local_server.wait_ready(base, process, READY_SECONDS)
            listed = httpx.get(bases[0] + "/v1/knowledge-bases", timeout=30).json()
            kb_id = next(kb["id"] for kb in listed if kb["name"] == "search")
            latencies: list[float] = []
            errors: list[str] = []
            lock = threading.Lock()

            def client(number: int, count: int, record: bool) -> None:
                mine = []
                with httpx.Client(timeout=120) as session:
                    for i in range(count):
                        base = bases[(number + i) % len(bases)]
                        text = texts[(number * count + i) % len(texts)]
                        body = {"query": text, "knowledge_bases": [kb_id], "mode": "hybrid"}
                        started = time.perf_counter()
                        response = session.post(base + "/v1/search", json=body)
                        mine.append(time.perf_counter() - started)
                        if response.status_code != 200:
                            errors.append(f"{response.status_code} {response.text[:200]}")
                if record:
                    with lock:
                        latencies.extend(mine)

            with ThreadPoolExecutor(clients) as pool:  # warm-up: pools, caches, the plans
                list(pool.map(lambda n: client(n, 2, False), range(clients)))
            meter = CpuMeter(postmaster, [p.pid for p in processes])
            load_before = load()
            meter.start()
            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                list(pool.map(lambda n: client(n, requests, True), range(clients)))
            elapsed = time.perf_counter() - started
            cpu = meter.stop()
        finally:
            stop_all(processes)
    if errors:
        sys.exit(f"{len(errors)} searches failed, e.g. {errors[0]}")
    ms = [x * 1000 for x in latencies]
    return {
        "serves": serves,
        "requests": len(ms),
        "requests_per_s": len(ms) / elapsed,
        "p50_ms": pct(ms, 50),
        "p95_ms": pct(ms, 95),
        "load_before": load_before,
        "load_after": load(),
        **cpu,
    }


# -- report --------------------------------------------------------------------------------------
def print_report(figures: dict[str, Any]) -> None:
    if "ingest" in figures:
        print(
            "\n| workers | documents | chunks | s from launch | docs/s | chunks/s | "
            "steady docs/s | steady chunks/s | first job done s | CPU cores: postgres / "
            "workers / bench | load before → after |"
        )
        print("|" + " --- |" * 11)
        for r in figures["ingest"]:
            print(
                f"| {r['workers']} | {r['indexed']}/{r['documents']} | {r['chunks']} | "
                f"{r['seconds_from_launch']:.1f} | {r['documents_per_s']:.1f} | "
                f"{r['chunks_per_s']:.0f} | {r['steady_documents_per_s']:.1f} | "
                f"{r['steady_chunks_per_s']:.0f} | {r['first_job_done_s']:.1f} | "
                f"{r['postgres_cores']:.2f} / {r['lorebase_cores']:.2f} / "
                f"{r['bench_cores']:.2f} | {r['load_before']} → {r['load_after']} |"
            )
    if "search" in figures:
        print(
            "\n| serve processes | requests | req/s | p50 ms | p95 ms | CPU cores: postgres / "
            "serve / clients | CPU s per request: postgres / serve | load before → after |"
        )
        print("|" + " --- |" * 8)
        for r in figures["search"]:
            n = r["requests"]
            print(
                f"| {r['serves']} | {n} | {r['requests_per_s']:.1f} | {r['p50_ms']:.0f} | "
                f"{r['p95_ms']:.0f} | {r['postgres_cores']:.2f} / {r['lorebase_cores']:.2f} / "
                f"{r['bench_cores']:.2f} | {1000 * r['postgres_cpu_s'] / n:.1f} ms / "
                f"{1000 * r['lorebase_cpu_s'] / n:.1f} ms | "
                f"{r['load_before']} → {r['load_after']} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="ingest,search")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--serves", default="1,2")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=20, help="per client")
    parser.add_argument("--rounds", type=int, default=1, help="repeat each list, alternating")
    parser.add_argument("--pg-admin", help="superuser URL to a server's postgres database")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    key = DataKey.generate()
    figures: dict[str, Any] = {"load_start": load()}
    with postgres_admin(args.pg_admin) as admin:
        postmaster = postmaster_pid(admin)
        if "ingest" in parts:
            files = upload_texts(args.documents)
            counts = [int(w) for w in args.workers.split(",")]
            figures["ingest"] = []
            for round_ in range(args.rounds):
                for workers in counts if round_ % 2 == 0 else counts[::-1]:
                    row = ingest_run(admin, postmaster, workers, files, key)
                    figures["ingest"].append(row)
                    print(f"ingest: {json.dumps(row)}", file=sys.stderr)
        if "search" in parts:
            sys.path.insert(0, str(REPO / "bench"))
            from search import queries  # bench/search.py

            url, info = search_base(admin, args.chunks)
            figures["search_base"] = info
            texts = queries(200)
            counts = [int(s) for s in args.serves.split(",")]
            figures["search"] = []
            for round_ in range(args.rounds):
                for serves in counts if round_ % 2 == 0 else counts[::-1]:
                    row = search_run(
                        url, postmaster, serves, texts, args.clients, args.requests, key
                    )
                    figures["search"].append(row)
                    print(f"search: {json.dumps(row)}", file=sys.stderr)
    figures["load_end"] = load()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1))
    print_report(figures)
    print(f"\nload average at start {figures['load_start']}, at end {figures['load_end']}")


if __name__ == "__main__":
    main()
