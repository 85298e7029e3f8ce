"""`GET /v1/events` over real HTTP: uvicorn on 127.0.0.1, httpx reading the stream.

Every read has a timeout and every wait a deadline, so a broken route fails the test instead
of hanging the suite. Streams are opened after their ``: connected`` comment arrives, which
the bus sends once the subscription is in place: no test sleeps for timing.
"""

from __future__ import annotations

import io
import json
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from integration.serve_process import free_port, serve_command, wait_until_ready
from lorebase import events as events_module
from lorebase.accounts.base import Role
from lorebase.api.app import serving_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.events import EventBus
from lorebase.settings import ServeSettings, Settings
from lorebase.types import FailureReason
from lorebase.vault.keys import DataKey
from waiting import wait_until

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

READ_TIMEOUT = 5.0  # one read from a socket (the bus's keep-alive comes every 15 s)
WAIT_SECONDS = 10.0  # the longest a test waits for an event it expects
STOP_SECONDS = 5.0  # the longest a server may take to stop

SECRET_KB = "project-blueheron-deal-room"
SECRET_NAME = "quarterly-merger-plans.md"
SECRET_TEXT = "# Merger\n\nThe codename for the merger is BLUEHERON and it closes in May.\n"
SECRETS = (SECRET_KB, SECRET_NAME, "quarterly-merger", "BLUEHERON", "codename")

# What an event may carry: ids, states, counts — never a name or text.
EVENT_KEYS = {
    *("type", "knowledge_base_id", "document_id", "state", "reason", "documents", "chunks"),
    *("progress_done", "progress_total", "seconds_left"),  # a pass's pace
}
TOKEN = re.compile(r"[a-z0-9_]+")  # hex ids, state names, reason codes

Event = dict[str, object]


# -- a real server ---------------------------------------------------------------------------
class _Uvicorn(uvicorn.Server):
    """uvicorn that ends the event streams as its shutdown begins, so it need not wait for
    the clients to leave (what `lorebase.api.app.run` does for `lorebase serve`)."""

    def __init__(self, config: uvicorn.Config, bus: EventBus | None) -> None:
        super().__init__(config)
        self.bus = bus

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.bus is not None:
            self.bus.close()
        await super().shutdown(sockets)


@dataclass
class Live:
    lb: Lorebase
    base: str
    keys: dict[str, str]
    uvicorn: uvicorn.Server
    thread: threading.Thread

    def headers(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}

    def call(self, method: str, path: str, user: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(
            method, self.base + path, headers=self.headers(user), timeout=READ_TIMEOUT, **kwargs
        )

    def create_kb(self, user: str, name: str, scope: str = "personal") -> int:
        body = {"name": name, "scope": scope}
        response = self.call("POST", "/v1/knowledge-bases", user, json=body)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def upload(self, user: str, kb_id: int, name: str, data: bytes) -> str:
        files = {"files": (name, io.BytesIO(data), "application/octet-stream")}
        response = self.call("POST", f"/v1/knowledge-bases/{kb_id}/documents", user, files=files)
        assert response.status_code == 202, response.text
        return str(response.json()["documents"][0]["id"])

    def stop(self) -> None:
        """Ask uvicorn to stop, as on SIGTERM; fail (after forcing it) if it does not."""
        if not self.thread.is_alive():
            return
        self.uvicorn.should_exit = True
        self.thread.join(STOP_SECONDS)
        if self.thread.is_alive():
            self.uvicorn.force_exit = True
            self.thread.join(STOP_SECONDS)
            pytest.fail(f"the server did not stop within {STOP_SECONDS} s")


@contextmanager
def serve(
    tmp_path: Path,
    *,
    auth: bool = True,
    watch: bool = False,
    end_streams: bool = False,
    allowed_hosts: tuple[str, ...] = (),
) -> Iterator[Live]:
    """The real app (its life span starts and stops the workers) under uvicorn in a thread,
    on a socket bound here, so the port is ours before the server starts."""
    serve = ServeSettings(auth=auth, workers=1, watch=watch, allowed_hosts=allowed_hosts)
    lb = open_lorebase(
        settings=Settings(data_dir=tmp_path / "data", serve=serve),
        embedder=FakeEmbedder(),
        data_key=DataKey.generate(),
    )
    accounts = lb.accounts
    keys = {}
    for name, role in {"admin": Role.ADMIN, "alice": Role.MEMBER, "bob": Role.MEMBER}.items():
        keys[name], _ = accounts.create_key(accounts.create_user(name, role).id)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(serving_app(lb), log_level="warning", access_log=False)
    runner = _Uvicorn(config, lb.events if end_streams else None)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    live = Live(lb, f"http://127.0.0.1:{sock.getsockname()[1]}", keys, runner, thread)
    thread.start()
    try:
        wait_until(lambda: runner.started or not thread.is_alive(), WAIT_SECONDS, what="the server")
        assert runner.started, "the server did not start"
        yield live
    finally:
        try:
            live.stop()
        finally:
            sock.close()
            lb.close()


# -- reading the stream ----------------------------------------------------------------------
class Sse:
    """An open ``text/event-stream`` response, read frame by frame; keeps every byte."""

    def __init__(self, response: httpx.Response) -> None:
        self.raw = bytearray()
        self._chunks = response.iter_raw()
        self._pending = b""

    def frame(self) -> list[str] | None:
        """The next frame's lines; None when the stream ended (after a whole frame)."""
        while b"\n\n" not in self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                assert not self._pending, f"the stream ended inside a frame: {self._pending!r}"
                return None
            self.raw += chunk
            self._pending += chunk
        head, self._pending = self._pending.split(b"\n\n", 1)
        return head.decode().split("\n")

    def event(self) -> Event | None:
        """The next event, comments skipped, checked to be well formed and content-free."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            lines = self.frame()
            if lines is None:
                return None
            if all(line.startswith(":") for line in lines):
                continue
            return parse(lines)
        raise AssertionError(f"only comments for {WAIT_SECONDS} s")

    def until(self, done: Callable[[Event], bool]) -> list[Event]:
        """Events up to and including the first that is ``done``."""
        seen: list[Event] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            event = self.event()
            assert event is not None, f"the stream ended early after {seen}"
            seen.append(event)
            if done(event):
                return seen
        raise AssertionError(f"no awaited event in {WAIT_SECONDS} s: {seen}")

    def assert_no_secrets(self) -> None:
        text = bytes(self.raw).decode()
        for secret in SECRETS:
            assert secret.lower() not in text.lower(), secret


def parse(lines: list[str]) -> Event:
    """One SSE frame: an ``event:`` line naming the type, a ``data:`` line of JSON."""
    assert len(lines) == 2, lines
    assert lines[0].startswith("event: ") and lines[1].startswith("data: "), lines
    data = json.loads(lines[1].removeprefix("data: "))
    assert isinstance(data, dict) and data["type"] == lines[0].removeprefix("event: "), lines
    assert set(data) <= EVENT_KEYS, data
    assert isinstance(data["knowledge_base_id"], int), data
    for value in data.values():
        assert value is None or isinstance(value, int | float) or TOKEN.fullmatch(value), data
    return data


@contextmanager
def subscribe(live: Live, user: str) -> Iterator[Sse]:
    """``user``'s open stream, once the bus has registered it."""
    with (
        httpx.Client(timeout=READ_TIMEOUT, headers=live.headers(user)) as client,
        client.stream("GET", live.base + "/v1/events") as response,
    ):
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        sse = Sse(response)
        assert sse.frame() == [": connected"]
        yield sse


def settled(document_id: str) -> Callable[[Event], bool]:
    return lambda e: e.get("document_id") == document_id and e["state"] in ("indexed", "failed")


def totals_of(kb_id: int) -> Callable[[Event], bool]:
    """The base's state and totals, sent after each upload it indexed."""
    return lambda e: e["type"] == "knowledge_base" and e["knowledge_base_id"] == kb_id


# -- tests -----------------------------------------------------------------------------------
def test_an_upload_streams_its_states_as_sse_frames_without_names_or_text(
    tmp_path: Path,
) -> None:
    with serve(tmp_path) as live:
        kb_id = live.create_kb("alice", SECRET_KB)
        with subscribe(live, "alice") as sse:
            document_id = live.upload("alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
            seen = sse.until(settled(document_id))
        assert all(e["type"] == "document" and e["knowledge_base_id"] == kb_id for e in seen)
        assert {e["document_id"] for e in seen} == {document_id}
        states = [e["state"] for e in seen]
        assert states[0] == "pending" and "extracting" in states and states[-1] == "indexed"
        assert seen[-1]["reason"] is None
        sse.assert_no_secrets()
        got = live.call("GET", f"/v1/documents/{document_id}", "alice").json()
        assert got["state"] == "indexed" and got["name"] == SECRET_NAME


def test_a_failed_upload_streams_a_reason_code_not_the_name(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        kb_id = live.create_kb("alice", SECRET_KB)
        with subscribe(live, "alice") as sse:
            name = SECRET_NAME.replace(".md", ".pdf")
            document_id = live.upload("alice", kb_id, name, b"%PDF-1.7 BLUEHERON not a pdf")
            last = sse.until(settled(document_id))[-1]
        assert last["state"] == "failed" and last["reason"] in set(FailureReason)
        sse.assert_no_secrets()


def test_a_folder_pass_streams_counts_to_everyone_who_sees_the_base(tmp_path: Path) -> None:
    folder = tmp_path / "quarterly-merger-folder"
    folder.mkdir()
    (folder / SECRET_NAME).write_text(SECRET_TEXT, encoding="utf-8")
    with serve(tmp_path, watch=True) as live:
        kb_id = live.create_kb("admin", SECRET_KB, scope="global")
        with subscribe(live, "alice") as alice, subscribe(live, "bob") as bob:
            added = live.call(
                "POST", f"/v1/knowledge-bases/{kb_id}/sources", "admin", json={"path": str(folder)}
            )
            assert added.status_code == 201, added.text
            for sse in (alice, bob):
                last = sse.until(
                    lambda e: e["type"] == "knowledge_base" and e.get("documents") == 1
                )
                assert last[-1]["knowledge_base_id"] == kb_id and last[-1]["chunks"] == 1
                # Each document of the pass is announced as it settles, not only the totals.
                indexed = [e for e in last if e["type"] == "document" and e["state"] == "indexed"]
                assert len(indexed) == 1 and indexed[0]["knowledge_base_id"] == kb_id
                sse.assert_no_secrets()


def test_nobody_gets_events_for_a_base_they_cannot_see(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        private = live.create_kb("alice", SECRET_KB)
        shared = live.create_kb("admin", "handbook", scope="global")
        with (
            subscribe(live, "alice") as alice,
            subscribe(live, "bob") as bob,
            subscribe(live, "admin") as admin,
        ):
            secret_id = live.upload("alice", private, SECRET_NAME, SECRET_TEXT.encode())
            alice.until(settled(secret_id))
            # A marker every stream may see: for bob and admin it must be the first event.
            marker_id = live.upload("admin", shared, "welcome.md", b"# Welcome\n\nHello.\n")
            for other in (bob, admin):
                seen = other.until(settled(marker_id))
                assert {e["knowledge_base_id"] for e in seen} == {shared}
                assert secret_id.encode() not in other.raw
                other.assert_no_secrets()


def test_a_deleted_base_whose_id_is_reused_sends_its_old_viewer_nothing(tmp_path: Path) -> None:
    """SQLite hands a deleted base's id to the next base; the stream must not follow it."""
    with serve(tmp_path) as live:
        kept = live.create_kb("alice", "alice-notes")
        gone = live.create_kb("alice", "alice-scratch")
        with subscribe(live, "alice") as alice:
            assert live.call("DELETE", f"/v1/knowledge-bases/{gone}", "alice").status_code == 204
            bobs = live.create_kb("bob", SECRET_KB)
            secret_id = live.upload("bob", bobs, SECRET_NAME, SECRET_TEXT.encode())
            marker_id = live.upload("alice", kept, "todo.md", b"# Todo\n\nWater plants.\n")
            seen = alice.until(settled(marker_id))
        # What this test is about; should the store stop reusing ids, it has no case left.
        assert bobs == gone, "the store no longer reuses ids of deleted bases"
        assert {e["knowledge_base_id"] for e in seen} == {kept}, seen
        assert secret_id.encode() not in alice.raw
        alice.assert_no_secrets()


def test_access_lost_while_a_stream_is_open_stops_its_events(tmp_path: Path) -> None:
    """Visibility is judged with the caller looked up afresh for every event: a member
    removed from a team hears no more of its base, a revoked key's stream ends."""
    with serve(tmp_path) as live:
        accounts = live.lb.accounts
        team = accounts.create_team("research")
        alice, bob = accounts.get_user("alice"), accounts.get_user("bob")
        for user in (alice, bob):
            accounts.set_member(team.id, user.id, Role.MEMBER)
        accounts.set_member(team.id, accounts.get_user("admin").id, Role.ADMIN)
        body = {"name": SECRET_KB, "scope": "team", "team": "research"}
        team_kb = live.call("POST", "/v1/knowledge-bases", "admin", json=body).json()["id"]
        open_kb = live.create_kb("admin", "handbook", scope="global")
        with subscribe(live, "alice") as alice_stream, subscribe(live, "bob") as bob_stream:
            first = live.upload("admin", team_kb, "one.md", b"# One\n\nFirst note.\n")
            alice_stream.until(settled(first))
            alice_stream.until(totals_of(team_kb))
            bob_stream.until(settled(first))
            bob_stream.until(totals_of(team_kb))
            accounts.set_member(team.id, alice.id, None)
            for key in accounts.list_keys():
                if key.user_id == bob.id:
                    accounts.revoke_key(key.id)
            second = live.upload("admin", team_kb, "two.md", b"# Two\n\nSecond note.\n")
            marker = live.upload("admin", open_kb, "welcome.md", b"# Welcome\n\nHello.\n")
            seen = alice_stream.until(settled(marker))
            assert {e["knowledge_base_id"] for e in seen} == {open_kb}, seen
            assert second.encode() not in alice_stream.raw
            assert bob_stream.event() is None  # the stream ended at the next event


def test_the_stream_needs_a_valid_key_when_keys_are_on(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        for headers in ({}, {"Authorization": "Bearer lb_wrong"}, {"X-API-Key": "lb_nope"}):
            response = httpx.get(live.base + "/v1/events", headers=headers, timeout=READ_TIMEOUT)
            assert response.status_code == 401, headers
            assert response.headers["content-type"].startswith("application/problem+json")


def test_without_keys_the_local_caller_gets_a_stream(tmp_path: Path) -> None:
    with (
        serve(tmp_path, auth=False) as live,
        httpx.stream("GET", live.base + "/v1/events", timeout=READ_TIMEOUT) as response,
    ):
        assert response.status_code == 200
        assert Sse(response).frame() == [": connected"]


def test_an_idle_stream_sends_keep_alive_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_module, "KEEPALIVE_SECONDS", 0.05)
    with serve(tmp_path) as live, subscribe(live, "alice") as sse:
        assert [sse.frame(), sse.frame()] == [[": keep-alive"], [": keep-alive"]]


def test_a_stream_ends_when_its_client_leaves(tmp_path: Path) -> None:
    with serve(tmp_path) as live:
        with subscribe(live, "alice"):
            pass
        # uvicorn (with no graceful-shutdown timeout) stops only once no request runs, and
        # the next keep-alive is 15 s away: a stream that outlived its client fails this.
        started = time.monotonic()
        live.stop()
        assert time.monotonic() - started < STOP_SECONDS


def test_closing_the_bus_ends_every_stream_cleanly_and_the_server_stops(tmp_path: Path) -> None:
    with serve(tmp_path, end_streams=True) as live, subscribe(live, "alice") as sse:
        stopper = threading.Thread(target=live.stop, daemon=True)
        stopper.start()
        assert sse.event() is None  # the response ended with a whole chunked body
        stopper.join(STOP_SECONDS)
        assert not live.thread.is_alive()


def test_serve_stops_on_sigterm_while_a_stream_is_open(tmp_path: Path) -> None:
    port = free_port()
    command = serve_command(tmp_path, port, "--workers", "1", "--no-auth")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(base, process)
        with httpx.stream("GET", base + "/v1/events", timeout=READ_TIMEOUT) as response:
            sse = Sse(response)
            assert sse.frame() == [": connected"]
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=STOP_SECONDS)
            assert sse.frame() is None
    finally:
        process.kill()
        process.wait(timeout=STOP_SECONDS)
