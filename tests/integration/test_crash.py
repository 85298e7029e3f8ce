"""Real `lorebase` processes: kill -9 at random moments of a sync, SIGTERM, two processes.

After every kill the database must be consistent — each document fully indexed (its chunks,
lexical rows and vectors all there), written whole but awaiting its vectors (found by keyword:
a kill between a pass's two writes), or pending with nothing half-written — and a final sync
must converge to exactly the index a clean run builds, every document indexed or failed. The
tests run on both stores (``backend``; the lock's on SQLite only): the SQLite file (its WAL,
its FTS index checked too), and PostgreSQL, where the server rolls back a killed process's
open transaction. The clean run to compare with is always a SQLite one, so the two stores must
also build the same index.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration.serve_process import free_port, serve_command, wait_until_ready
from integration.store_backends import StoreBackend
from lorebase.store.sqlite import SqliteStore
from lorebase.store.sqlite.tantivy_index import TantivyIndexes
from waiting import wait_until

# Rounds per store: a PostgreSQL round costs about twice a SQLite one (a server to connect to,
# slower writes), and a killed process's transaction is rolled back whole by the server.
KILLS = {"sqlite": 20, "postgres": 10}
FILES = 240
SIGTERM_FILES = {"sqlite": 800, "postgres": 400}  # indexing on PostgreSQL is ~2x slower


def corpus(root: Path, files: int = FILES) -> Path:
    rng = random.Random(7)
    for n in range(files):
        write_document(root, n, rng)
    return root


WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
)


def write_document(root: Path, n: int, rng: random.Random) -> None:
    sections = "\n\n".join(
        f"## Part {p}\n\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 400)))
        for p in range(rng.randint(1, 4))
    )
    path = root / f"group{n % 7}" / f"doc{n:03}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Document {n}\n\n{sections}\n")


def lorebase(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lorebase", "--data-dir", str(data), "--embedder", "fake", *args]


SQLITE = StoreBackend("sqlite")


def run(data: Path, *args: str, backend: StoreBackend = SQLITE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        lorebase(data, *args), capture_output=True, text=True, timeout=300, env=backend.environ()
    )


# How a vector row names its chunk, in each store.
VECTOR_OF_CHUNK = {"sqlite": "c.rowid = v.chunk_rowid", "postgres": "c.seq = v.chunk_seq"}


def check_consistent(backend: StoreBackend, data: Path) -> int:
    """Raise unless the store is consistent; returns how many documents await their vectors
    (written by a pass's first write, killed before its second)."""
    rows = backend.rows(
        data,
        "SELECT d.id, d.state, d.chunk_count, d.identity_key, "
        "(SELECT count(*) FROM chunks c WHERE c.document_id = d.id), "
        f"(SELECT count(*) FROM vectors v JOIN chunks c ON {VECTOR_OF_CHUNK[backend.name]} "
        " WHERE c.document_id = d.id) FROM documents d",
    )
    awaiting = 0
    for _, state, expected, identity_key, chunks, vectors in rows:
        assert state in ("indexed", "pending", "extracting", "embedding", "failed")
        if state == "indexed":
            assert chunks == expected == vectors and chunks > 0
        elif chunks and vectors:  # a document being re-indexed keeps its whole previous version
            assert chunks == expected == vectors and identity_key is not None
        elif chunks:  # its new version written whole, found by keyword, awaiting its vectors
            assert chunks == expected and identity_key is None
            assert state in ("pending", "extracting", "embedding")
            awaiting += 1
    if backend.postgres:
        # The lexical rows are the chunks' own columns; what BM25 sums per document must
        # match them.
        assert backend.rows(
            data,
            "SELECT count(*) FROM documents d WHERE d.lexical_tokens <> "
            "(SELECT coalesce(sum(c.lexical_length), 0) FROM chunks c "
            " WHERE c.document_id = d.id)",
        ) == [(0,)]
        return awaiting
    conn = sqlite3.connect(data / "lorebase.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    # The Tantivy index beside the file (a catch-up may have been killed too) holds exactly
    # the chunks once caught up.
    with SqliteStore(data / "lorebase.db") as store:
        lexical = store._lexical
        assert isinstance(lexical, TantivyIndexes)
        with store.database.read() as conn:
            lexical.check(conn)
    return awaiting


def index_of(backend: StoreBackend, data: Path) -> set[tuple[str, int, str]]:
    return set(
        backend.rows(
            data,
            "SELECT d.path, c.ordinal, c.content_hash FROM chunks c "
            "JOIN documents d ON d.id = c.document_id",
        )
    )


def clean_index_of(folder: Path, data: Path) -> set[tuple[str, int, str]]:
    """The index a single uninterrupted run builds from the folder as it is now (in a SQLite
    store, whatever the store under test)."""
    result = run(data, "add", str(folder), "--kb", "docs")
    assert result.returncode == 0, result.stderr
    return index_of(SQLITE, data)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return corpus(tmp_path / "docs")


def test_kill_9_at_random_moments_never_leaves_a_partial_document(
    folder: Path, tmp_path: Path, backend: StoreBackend
) -> None:
    data = tmp_path / "data"
    created = run(data, "kb", "create", "docs", "--source", str(folder), backend=backend)
    assert created.returncode == 0, created.stderr
    rng = random.Random(11)
    killed_mid_pass = killed_between_writes = 0
    window = 1.0  # seconds after the pass starts
    for _ in range(KILLS[backend.name]):
        # Every round has work to interrupt: some files change, one appears, one goes.
        for n in rng.sample(range(FILES), 30):
            write_document(folder, n, rng)
        write_document(folder, FILES + rng.randint(0, 50), rng)
        rng.choice(sorted(folder.rglob("*.md"))).unlink()
        before = _pass_started_at(backend, data)
        process = subprocess.Popen(
            lorebase(data, "sync", "--kb", "docs"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=backend.environ(),
        )
        # Kill at a random moment after the pass began; the window adapts to the machine's
        # speed so that most kills land mid-pass on a fast machine as on a slow one.
        _wait_for_pass(backend, data, process, before)
        time.sleep(rng.uniform(0, window))  # the wait is the test: a kill at a random moment
        running = process.poll() is None
        if running:
            killed_mid_pass += 1
        else:
            window *= 0.6
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        between = check_consistent(backend, data) > 0
        killed_between_writes += between
        if running and not between and not killed_between_writes:
            # Killed before its first writes (models still loading): reach further next time.
            window = min(window * 1.5, 10.0)
    assert killed_mid_pass >= KILLS[backend.name] // 2, "the kills came too late to test anything"
    # Documents are written twice (chunks, then vectors): some kills land in between.
    assert killed_between_writes, "no kill landed between a document's two writes"
    final = run(data, "sync", "--kb", "docs", backend=backend)
    assert final.returncode == 0, final.stderr
    check_consistent(backend, data)
    assert _states(backend, data) <= {"indexed", "failed"}
    assert index_of(backend, data) == clean_index_of(folder, tmp_path / "clean")


def test_sigterm_finishes_the_current_document_and_leaves_the_rest_pending(
    tmp_path: Path, backend: StoreBackend
) -> None:
    folder = corpus(
        tmp_path / "docs", files=SIGTERM_FILES[backend.name]
    )  # enough work to interrupt
    data = tmp_path / "data"
    process = subprocess.Popen(
        lorebase(data, "add", str(folder), "--kb", "docs"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=backend.environ(),
    )
    wait_until(lambda: _some_written(backend, data), 60, what="a first document written")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    check_consistent(backend, data)
    states = _states(backend, data)
    if "pending" not in states:
        pytest.skip("the pass finished before the signal arrived")
    assert "indexed" in states
    assert run(data, "sync", backend=backend).returncode == 0
    assert index_of(backend, data) == clean_index_of(folder, tmp_path / "clean")


# SQLite only: the ingestion lock is a file of the data directory whatever the store (over
# PostgreSQL, processes on other machines coordinate through the jobs table: test_scale_out).
def test_a_second_process_is_refused_while_one_indexes(folder: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run(data, "kb", "create", "docs", "--source", str(folder)).returncode == 0
    watcher = subprocess.Popen(
        lorebase(data, "watch", "--rescan-seconds", "600"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        watcher.stdout.readline()  # "watching …": it holds the lock now
        second = run(data, "sync")
        assert second.returncode == 4
        assert "lorebase watch" in second.stderr and "is indexing" in second.stderr
        assert run(data, "status").returncode == 0  # reading needs no lock
    finally:
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=60) == 0


def _wait_for_pass(
    backend: StoreBackend, data: Path, process: subprocess.Popen[bytes], before: float | None
) -> None:
    """Until the knowledge base records a newer pass start (or the process is gone)."""

    def begun() -> bool:
        started = _pass_started_at(backend, data)
        return process.poll() is not None or started not in (None, before)

    wait_until(begun, 60, what="the pass to begin", interval=0.01)


def _pass_started_at(backend: StoreBackend, data: Path) -> float | None:
    """The latest pass start recorded; None when there is none yet or the database is busy
    (the caller keeps waiting)."""
    rows = backend.rows_if_ready(data, "SELECT max(pass_started_at) FROM knowledge_bases")
    return None if rows is None else rows[0][0]


def _some_written(backend: StoreBackend, data: Path) -> bool:
    """Some document's chunks are written (found by keyword, its vectors coming or made)."""
    return bool({"indexed", "embedding"} & _states(backend, data))


def _states(backend: StoreBackend, data: Path) -> set[str]:
    rows = backend.rows_if_ready(data, "SELECT DISTINCT state FROM documents")
    return {row[0] for row in rows or ()}


if os.name != "posix":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="signals and flock are POSIX")


UPLOAD_KILLS = {"sqlite": 6, "postgres": 4}
UPLOADS = 30


def _serve(backend: StoreBackend, data: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        serve_command(data, port, "--no-auth", "--workers", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=backend.environ(),
    )


def _phantoms(backend: StoreBackend, data: Path) -> list[str]:
    """Uploads that are neither indexed-or-waiting with their original, nor failed with a
    reason: the documents a crash used to leave pending forever."""
    blobs = set(backend.blobs(data))
    rows = backend.rows(
        data, "SELECT id, state, reason FROM documents WHERE display_name IS NOT NULL"
    )
    return [
        i
        for i, state, reason in rows
        if (state == "failed") != (i not in blobs) or (state == "failed" and not reason)
    ]


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_kill_9_while_uploading_never_leaves_a_phantom_upload(
    tmp_path: Path, backend: StoreBackend
) -> None:
    """`lorebase serve` killed at random moments of a stream of uploads (receiving a body,
    sealing the original, writing its row, queueing, indexing): after a restart every upload
    has its original or has failed with a reason, no original is left without its row, and
    uploading every file again indexes each exactly once."""
    import threading

    import httpx

    data = tmp_path / "data"
    files = [
        (f"note{n:02}.md", f"# Note {n}\n\n{' '.join(WORDS[: n % 12 + 1])} {n}\n".encode())
        for n in range(UPLOADS)
    ]
    rng = random.Random(5)
    kb_id: int | None = None
    for _ in range(UPLOAD_KILLS[backend.name]):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        process = _serve(backend, data, port)
        wait_until_ready(base, process)
        if kb_id is None:
            body = {"name": "up", "scope": "global"}
            kb_id = httpx.post(f"{base}/v1/knowledge-bases", json=body, timeout=10).json()["id"]
        stop = threading.Event()

        def upload_all(
            url: str = f"{base}/v1/knowledge-bases/{kb_id}/documents",
            stop: threading.Event = stop,
        ) -> None:
            for name, data_bytes in rng.sample(files, len(files)):
                if stop.is_set():
                    return
                try:
                    httpx.post(url, files={"files": (name, data_bytes)}, timeout=10)
                except httpx.HTTPError:
                    return  # the server was killed

        uploader = threading.Thread(target=upload_all)
        uploader.start()
        time.sleep(rng.uniform(0.05, 0.8))  # the wait is the test: a kill at a random moment
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        stop.set()
        uploader.join(timeout=30)
    if backend.postgres:
        # The killed servers' jobs wait for their leases to run out (30 s) before another
        # worker takes them: let that time pass now.
        backend.rows(data, "UPDATE jobs SET lease_until = now() RETURNING id")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = _serve(backend, data, port)
    try:
        wait_until_ready(base, process)  # the start sweeps orphans and fails lost originals
        assert _phantoms(backend, data) == []
        url = f"{base}/v1/knowledge-bases/{kb_id}/documents"
        for name, data_bytes in files:
            response = httpx.post(url, files={"files": (name, data_bytes)}, timeout=30)
            assert response.status_code == 202, response.text
        listed: list[dict[str, str]] = []

        def settled() -> bool:
            listed[:] = httpx.get(url, timeout=10).json()
            return all(d["state"] in ("indexed", "failed") for d in listed)

        wait_until(settled, 120, interval=0.2, what=lambda: f"every upload settled: {listed}")
        states = [d["state"] for d in listed]
        assert states.count("indexed") == UPLOADS == len(states), states
    finally:
        process.terminate()
        process.wait(timeout=30)
    kept = {d["id"] for d in listed}
    if backend.postgres:
        # Over a shared store an original stored just before its server was killed (its row
        # never written) looks like another process's upload in flight: a start sweeps such
        # originals only once they are an hour old. Past that, the next sweep takes them.
        assert kept <= set(backend.blobs(data))
        backend.rows(data, "UPDATE blobs SET updated_at = now() - interval '2 hours' RETURNING id")
        port = free_port()
        process = _serve(backend, data, port)
        try:
            wait_until_ready(f"http://127.0.0.1:{port}", process)
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert set(backend.blobs(data)) == kept  # no orphan original, none missing
