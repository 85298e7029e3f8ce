"""`lorebase serve --processes 2` over the embedded store, as real processes on 127.0.0.1.

Which process takes a connection is the kernel's choice (``SO_REUSEPORT`` spreads them by
address); a test makes it by pausing the other one (SIGSTOP) and making connections until one
is answered: it can only be by the one still running. A client keeps that connection."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

import httpx
import pytest

from integration.serve_process import free_port, serve_command, wait_until_ready
from lorebase.priority import BACKGROUND_NICENESS
from lorebase.vault.keys import DataKey
from proc_state import process_state
from waiting import wait_until

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

TIMEOUT = 30.0


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def serving_children(pid: int) -> list[int]:
    """The server's children that answer requests (not its indexer, not extraction workers)."""
    return [child for child, command in _server_children(pid) if b"indexer" not in command]


def indexers(pid: int) -> list[int]:
    """The server's indexer of its own, when it runs (a list: none, or one)."""
    return [child for child, command in _server_children(pid) if b"indexer" in command]


def _server_children(pid: int) -> list[tuple[int, bytes]]:
    out = []
    for child in children_of(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"lorebase.api.processes" in command:
            out.append((child, command))
    return out


def niceness(pid: int) -> set[int]:
    """The nice values of the process's threads."""
    out = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out.add(int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]))
    return out


def gone(pid: int) -> bool:
    """Ended: gone, or a zombie its parent has not reaped yet."""
    return process_state(pid) in (None, "Z")


def socket_folder_of(pid: int) -> Path:
    """The folder of the sockets process ``pid`` bound among its server's processes."""
    (folder,) = socket_folders_of(pid)
    return folder


def socket_folders_of(pid: int) -> set[Path]:
    """The folders of the sockets process ``pid`` bound among its server's processes (other
    tests' servers make theirs meanwhile): its descriptors' socket inodes, named in
    /proc/net/unix."""
    bound = {}
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and "lorebase-serve-" in fields[7]:
            bound[fields[6]] = Path(fields[7]).parent
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:[") and target[8:-1] in bound:
                found.add(bound[target[8:-1]])
    return found


@contextmanager
def serving(
    data: Path, processes: int = 2, env: dict[str, str] | None = None, *options: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    command = serve_command(data, port, "--no-auth", "--workers", "1", *options)
    command += ["--processes", str(processes)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base, process)
        if processes > 1:
            wait_until(lambda: serving_children(process.pid), TIMEOUT, what="the second process")
        yield process, base
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=60)


@contextmanager
def paused(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def client_away_from(base: str, pid: int) -> httpx.Client:
    """A client whose connection is to a process other than ``pid`` (paused meanwhile)."""
    with paused(pid):
        for _ in range(200):
            client = httpx.Client(base_url=base, timeout=TIMEOUT)
            try:
                if client.get("/readyz", timeout=0.5).status_code == 200:
                    return client
            except httpx.TimeoutException:
                pass
            client.close()  # its connection waits at the paused process
    raise AssertionError(f"no process but {pid} answered")


def events_until_indexed(response: httpx.Response, document_id: str) -> list[dict[str, object]]:
    seen: list[dict[str, object]] = []
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("document_id") == document_id:
            seen.append(event)
            if event.get("state") in ("indexed", "failed"):
                return seen
    raise AssertionError(f"the stream ended after {seen}")


@pytest.mark.parametrize("apart", [True, False], ids=["indexer-process", "first-indexes"])
def test_two_processes_share_the_port_the_jobs_and_the_events(tmp_path: Path, apart: bool) -> None:
    options = () if apart else ("--no-indexer",)
    with serving(tmp_path, 2, None, *options) as (server, base):
        folder = socket_folder_of(server.pid)
        (child,) = serving_children(server.pid)
        indexer = indexers(server.pid)
        assert len(indexer) == (1 if apart else 0)
        # Each answers while the other is paused.
        on_child, on_first = client_away_from(base, server.pid), client_away_from(base, child)
        with ExitStack() as stack:
            stack.callback(on_child.close)
            stack.callback(on_first.close)
            kb = on_child.post("/v1/knowledge-bases", json={"name": "k"})
            assert kb.status_code == 201, kb.text
            kb_id = kb.json()["id"]
            streams = []
            for pid in (server.pid, child):  # one stream on each process
                client = client_away_from(base, pid)
                stack.callback(client.close)
                streams.append(stack.enter_context(client.stream("GET", "/v1/events")))
            assert all(response.status_code == 200 for response in streams)
            # Uploaded through the second process: the indexer (or the first) indexes it.
            files = [("files", ("birds.md", b"# Birds\n\nThe heron waits.\n", "text/markdown"))]
            uploaded = on_child.post(f"/v1/knowledge-bases/{kb_id}/documents", files=files)
            assert uploaded.status_code == 202, uploaded.text
            document_id = uploaded.json()["documents"][0]["id"]
            for response in streams:
                states = [e["state"] for e in events_until_indexed(response, document_id)]
                assert states[0] == "pending" and states[-1] == "indexed", states
            # Either process finds it.
            for client in (on_child, on_first):
                body = {"query": "heron", "knowledge_bases": [kb_id], "mode": "keyword"}
                found = client.post("/v1/search", json=body).json()
                assert [hit["document_id"] for hit in found["hits"]] == [document_id]
        server.terminate()
        server.wait(timeout=60)
        wait_until(lambda: gone(child), TIMEOUT, what="the second process to stop")
        assert all(gone(pid) for pid in indexer)
    assert not folder.exists()


def test_one_server_indexes_in_a_lowered_process_of_its_own(tmp_path: Path) -> None:
    """`serve` alone is two processes over the embedded store: the one answering, and its
    indexer, whose every thread runs at a lower priority; uploads wait while the indexer is
    paused (no other process indexes them) and are indexed when it goes on."""
    with serving(tmp_path, 1) as (server, base), httpx.Client(base_url=base) as client:
        assert serving_children(server.pid) == []
        (indexer,) = wait_until(lambda: indexers(server.pid), TIMEOUT, what="the indexer")
        answering = min(niceness(server.pid))
        assert min(niceness(indexer)) >= min(19, answering + BACKGROUND_NICENESS)
        kb_id = client.post("/v1/knowledge-bases", json={"name": "k"}).json()["id"]
        files = [("files", ("owls.md", b"# Owls\n\nThe owl hoots.\n", "text/markdown"))]
        with paused(indexer):
            uploaded = client.post(f"/v1/knowledge-bases/{kb_id}/documents", files=files)
            assert uploaded.status_code == 202, uploaded.text
            document_id = uploaded.json()["documents"][0]["id"]
            time.sleep(1.5)  # the first's own workers would have indexed it by now
            assert client.get(f"/v1/documents/{document_id}").json()["state"] == "pending"
        wait_until(
            lambda: client.get(f"/v1/documents/{document_id}").json()["state"] == "indexed",
            TIMEOUT,
            what="the upload indexed by the indexer",
        )
        body = {"query": "owl", "knowledge_bases": [kb_id], "mode": "keyword"}
        found = client.post("/v1/search", json=body).json()
        assert [hit["document_id"] for hit in found["hits"]] == [document_id]


def test_an_indexer_that_dies_is_replaced_and_dies_at_once_with_the_server(
    tmp_path: Path,
) -> None:
    """A killed indexer is started again and indexes what waited; a killed server takes its
    indexer with it at once, so the next server starts over the same data directory (the
    ingestion lock is free) and finishes what was left."""
    data = tmp_path / "data"
    with serving(data, 1) as (server, base), httpx.Client(base_url=base) as client:
        (indexer,) = wait_until(lambda: indexers(server.pid), TIMEOUT, what="the indexer")
        kb_id = client.post("/v1/knowledge-bases", json={"name": "k"}).json()["id"]
        os.kill(indexer, signal.SIGKILL)
        files = [("files", ("bats.md", b"# Bats\n\nThe bat flies.\n", "text/markdown"))]
        uploaded = client.post(f"/v1/knowledge-bases/{kb_id}/documents", files=files)
        assert uploaded.status_code == 202, uploaded.text
        document_id = uploaded.json()["documents"][0]["id"]
        (again,) = wait_until(
            lambda: [pid for pid in indexers(server.pid) if pid != indexer],
            TIMEOUT,
            what="a new indexer",
        )
        wait_until(
            lambda: client.get(f"/v1/documents/{document_id}").json()["state"] == "indexed",
            TIMEOUT,
            what="the waiting upload indexed by the new indexer",
        )
        server.kill()
        server.wait(timeout=10)
        wait_until(lambda: gone(again), 5.0, what="the indexer to end with its server")
    with serving(data, 1) as (server, base), httpx.Client(base_url=base) as client:
        assert client.get(f"/v1/documents/{document_id}").json()["state"] == "indexed"


def test_a_process_that_dies_is_started_again_and_dies_with_the_server(tmp_path: Path) -> None:
    with serving(tmp_path) as (server, base):
        (child,) = serving_children(server.pid)
        os.kill(child, signal.SIGKILL)
        again = wait_until(
            lambda: [pid for pid in serving_children(server.pid) if pid != child],
            TIMEOUT,
            what="a new second process",
        )
        wait_until(lambda: _answers_alone(base, server.pid), TIMEOUT, what="the new one to answer")
        server.kill()  # no chance to stop its children: they notice
        server.wait(timeout=10)
        wait_until(lambda: gone(again[0]), TIMEOUT, what="the orphaned process to stop")


def _answers_alone(base: str, paused_pid: int) -> bool:
    client_away_from(base, paused_pid).close()
    return True


def test_processes_must_be_a_sensible_number(tmp_path: Path) -> None:
    command = serve_command(tmp_path, free_port(), "--no-auth", "--processes", "0")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--processes must be between 1 and 64" in done.stderr + done.stdout


def test_over_postgresql_each_process_is_a_whole_server(tmp_path: Path, postgres_url: str) -> None:
    """No sibling sockets: the shared store carries jobs and events; each process indexes."""
    env = dict(os.environ, LOREBASE_STORE=postgres_url)
    env["LOREBASE_DATA_KEY"] = DataKey.generate().to_base64()
    with serving(tmp_path, env=env) as (server, base):
        (child,) = serving_children(server.pid)
        assert not socket_folders_of(server.pid) and not socket_folders_of(child)
        assert indexers(server.pid) == []
        on_child, on_first = client_away_from(base, server.pid), client_away_from(base, child)
        with closing(on_child), closing(on_first):
            kb = on_child.post("/v1/knowledge-bases", json={"name": "pg"})
            assert kb.status_code == 201, kb.text
            kb_id = kb.json()["id"]
            files = [("files", ("fish.md", b"# Fish\n\nThe pike hides.\n", "text/markdown"))]
            uploaded = on_child.post(f"/v1/knowledge-bases/{kb_id}/documents", files=files)
            assert uploaded.status_code == 202, uploaded.text
            document_id = uploaded.json()["documents"][0]["id"]

            def indexed() -> bool:
                got = on_first.get(f"/v1/documents/{document_id}").json()
                return bool(got["state"] == "indexed")

            wait_until(indexed, TIMEOUT, what="the upload indexed")
            body = {"query": "pike", "knowledge_bases": [kb_id], "mode": "keyword"}
            found = on_first.post("/v1/search", json=body).json()
            assert [hit["document_id"] for hit in found["hits"]] == [document_id]


def test_readiness_waits_for_the_other_processes(tmp_path: Path) -> None:
    """Until each other process serves, the first answers alone: /readyz says so (a load
    balancer, or a benchmark, then waits for the whole server)."""
    from fastapi.testclient import TestClient

    from lorebase.api.app import serving_app
    from lorebase.app import open_lorebase
    from lorebase.embed.fake import FakeEmbedder

    waiting = [1]
    with open_lorebase(tmp_path / "data", embedder=FakeEmbedder()) as lb:
        app = serving_app(lb, starting=lambda: waiting[0])
        with TestClient(app, base_url="http://127.0.0.1") as client:
            starting = client.get("/readyz")
            assert starting.status_code == 503
            assert starting.json() == {"status": "starting", "processes_starting": 1}
            waiting[0] = 0
            assert client.get("/readyz").json() == {"status": "ready"}


def test_a_process_that_cannot_start_is_not_waited_for_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that ends before serving (here: its port is held by a socket that does not
    share it) no longer counts as starting; the watcher starts it again, and a start that
    fails outright (no processes left) is logged and tried later, not a dead watcher."""
    import logging
    import socket

    from lorebase.api import processes as module
    from lorebase.settings import EmbedSettings, ServeSettings, Settings

    monkeypatch.setattr(module, "RESTART_PAUSE_S", 0.5)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))  # no SO_REUSEPORT: nobody may join it
        held.listen()
        port = int(held.getsockname()[1])
        serve = ServeSettings(port=port, auth=False, processes=2)
        settings = Settings(data_dir=tmp_path / "data", embed=EmbedSettings("fake"), serve=serve)
        children = module.ServingProcesses(settings, "lorebase serve")
        children.start()
        try:
            wait_until(lambda: children.starting() == 0, TIMEOUT, what="the child to end")
            first = children._children[1]
            wait_until(lambda: children._children[1] is not first, TIMEOUT, what="a restart")

            def no_processes(*args: object, **kwargs: object) -> None:
                raise OSError(11, "Resource temporarily unavailable")

            monkeypatch.setattr(subprocess, "Popen", no_processes)
            with caplog.at_level(logging.ERROR, logger=module.__name__):
                wait_until(
                    lambda: "could not start" in caplog.text, TIMEOUT, what="the failed start"
                )
            assert children._watcher is not None and children._watcher.is_alive()
        finally:
            monkeypatch.undo()
            children.stop()
