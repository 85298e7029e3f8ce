"""lorebase past one process: two `serve` processes and two `lorebase worker` processes over one
real PostgreSQL. Uploads through both servers, searches through both, one worker killed with
``kill -9`` while it holds a job: every accepted upload ends indexed exactly once (its chunks
written once), and the events of the work reach the streams of both servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from integration.serve_process import free_port, wait_until_ready
from lorebase.vault.keys import DataKey
from waiting import wait_until

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

LEASE_SECONDS = 2
SMALL_FILES = 16


def lorebase(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lorebase", "--data-dir", str(home), *args]


@pytest.fixture
def cluster_env(postgres_url: str, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        LOREBASE_STORE=postgres_url,
        LOREBASE_DATA_KEY=DataKey.generate().to_base64(),
        LOREBASE_EMBEDDER="fake",
    )
    return env


class Process:
    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.handle = log.open("wb")
        self.popen = subprocess.Popen(
            command, env=env, stdout=self.handle, stderr=subprocess.STDOUT
        )

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.handle.close()


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        process.stop()


class EventReader(threading.Thread):
    """Reads one server's event stream into a list until told to stop."""

    def __init__(self, base: str, key: str) -> None:
        super().__init__(daemon=True)
        self.base, self.key = base, key
        self.events: list[dict[str, object]] = []
        self.open = threading.Event()

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        with (
            httpx.Client(timeout=httpx.Timeout(5, read=None)) as client,
            client.stream("GET", self.base + "/v1/events", headers=headers) as response,
        ):
            self.open.set()
            for line in response.iter_lines():
                if line.startswith("data:"):
                    self.events.append(json.loads(line[5:]))


def test_two_servers_two_workers_one_killed_every_upload_indexed_once(
    cluster_env: dict[str, str], tmp_path: Path, processes: list[Process], postgres_url: str
) -> None:
    env = cluster_env
    made = subprocess.run(
        lorebase(tmp_path / "admin", "users", "create", "ops", "--admin"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    key = next(w for w in made.stdout.split() if w.startswith("lb_"))
    headers = {"Authorization": f"Bearer {key}"}

    servers = []
    for n in range(2):
        port = free_port()
        home = tmp_path / f"serve{n}"
        command = lorebase(home, "serve", "--port", str(port), "--no-ingest")
        processes.append(Process(command, env, tmp_path / f"serve{n}.log"))
        servers.append(f"http://127.0.0.1:{port}")
    workers = []
    for n in range(2):
        home = tmp_path / f"worker{n}"
        command = lorebase(home, "worker", "--workers", "1", "--lease-seconds", str(LEASE_SECONDS))
        workers.append(Process(command, env, tmp_path / f"worker{n}.log"))
        processes.append(workers[-1])
    for base, process in zip(servers, processes, strict=False):
        wait_until_ready(base, process.popen)

    created = httpx.post(
        servers[0] + "/v1/knowledge-bases",
        json={"name": "team", "scope": "global"},
        headers=headers,
        timeout=30,
    )
    assert created.status_code == 201, created.text
    kb_id = created.json()["id"]
    # A stream covers the bases its caller sees when it opens.
    readers = [EventReader(base, key) for base in servers]
    for reader in readers:
        reader.start()
        assert reader.open.wait(10)

    # Two large files (each a job of seconds) and many small ones, through both servers.
    paragraph = "The turbine blade {n} cools by film cooling in the boundary layer. " * 40
    big = ["\n\n".join(f"# Part {p}\n\n" + paragraph.format(n=p) for p in range(600))]
    files = [(f"big{n}.md", (big[0] + f"\n\nbig file {n}").encode()) for n in range(2)]
    files += [
        (f"note{n}.md", f"# Note {n}\n\nHeat transfer note number {n} on nozzles.".encode())
        for n in range(SMALL_FILES)
    ]
    document_ids = []
    for n, (name, data) in enumerate(files):
        response = httpx.post(
            f"{servers[n % 2]}/v1/knowledge-bases/{kb_id}/documents",
            files={"files": (name, data, "application/octet-stream")},
            headers=headers,
            timeout=60,
        )
        assert response.status_code == 202, response.text
        document_ids += [d["id"] for d in response.json()["documents"]]
    assert len(set(document_ids)) == len(files)

    # Kill worker 0 with -9 while it holds a job.
    import psycopg

    victim = workers[0].popen.pid
    with psycopg.connect(postgres_url, autocommit=True) as conn:

        def victim_holds_a_job() -> bool:
            held = conn.execute("SELECT leased_by FROM jobs WHERE leased_by IS NOT NULL").fetchall()
            return any(f":{victim}:" in row[0] for row in held)

        wait_until(
            victim_holds_a_job,
            60,
            what=lambda: "worker 0 to hold a job: " + workers[0].log.read_text()[-3000:],
        )
        os.kill(victim, signal.SIGKILL)

    # Every accepted upload ends indexed, through either server's eyes.
    states: dict[str, str] = {}

    def all_indexed() -> bool:
        listed = httpx.get(
            f"{servers[1]}/v1/knowledge-bases/{kb_id}/documents", headers=headers, timeout=30
        ).json()
        states.clear()
        states.update({d["id"]: d["state"] for d in listed})
        return set(states.values()) == {"indexed"} and len(states) == len(files)

    wait_until(all_indexed, 120, interval=0.25, what=lambda: f"every upload indexed: {states}")
    assert sorted(states) == sorted(document_ids)
    assert set(states.values()) == {"indexed"}, states

    # Indexed exactly once: each document holds exactly its chunks, no job is left.
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT d.id, d.chunk_count, count(c.id) FROM documents d "
            "LEFT JOIN chunks c ON c.document_id = d.id GROUP BY d.id, d.chunk_count"
        ).fetchall()
        assert all(count == expected for _, expected, count in rows), rows
        jobs = conn.execute("SELECT count(*) FROM jobs").fetchone()
        assert jobs is not None and jobs[0] == 0

    # Searches answer through both servers.
    for base in servers:
        found = httpx.post(
            base + "/v1/search",
            json={"query": "film cooling turbine blade", "knowledge_bases": [kb_id]},
            headers=headers,
            timeout=30,
        )
        assert found.status_code == 200, found.text
        assert found.json()["hits"]

    # Both servers' streams saw the documents indexed (the work happened in the workers).
    def indexed(reader: EventReader) -> set[object]:
        return {
            e.get("document_id")
            for e in list(reader.events)
            if e.get("type") == "document" and e.get("state") == "indexed"
        }

    for reader in readers:
        wait_until(
            lambda: indexed(reader) >= set(document_ids),  # noqa: B023
            30,
            what=lambda: f"{reader.base}'s stream to show all indexed: {len(indexed(reader))}",  # noqa: B023
        )
