"""`lorebase serve` as a real process on 127.0.0.1: first-start key, health, a search."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from integration.serve_process import free_port, serve_command, started, wait_until_ready
from lorebase.lock import IngestLock

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


async def mcp_session(url: str, key: str) -> tuple[set[str], str]:
    """List the tools and call one over MCP's streamable HTTP with the SDK's own client."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("list_knowledge_bases", {})
        block = result.content[0]
        assert isinstance(block, TextContent)
        return tools, block.text


def test_serve_prints_a_key_once_and_answers(tmp_path: Path) -> None:
    port = free_port()
    command = serve_command(tmp_path, port, "--workers", "1")
    process = started(command, tmp_path / "serve.log", stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        key = lines[1].strip()
        assert key.startswith("lb_"), lines
        base = f"http://127.0.0.1:{port}"
        assert f"open {base}/ in a browser" in lines[2], lines  # the web page's address
        wait_until_ready(base, process)
        # uvicorn serves with what is installed: HTTP parsed in C and libuv's event loop, not
        # h11 and asyncio in Python (~8% of a search's CPU with sixteen clients).
        assert {"httptools", "uvloop"} <= _packages_loaded(process.pid)
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{base}/v1/knowledge-bases", timeout=5).status_code == 401
        created = httpx.post(
            f"{base}/v1/knowledge-bases",
            json={"name": "k", "scope": "global"},
            headers=headers,
            timeout=5,
        )
        assert created.status_code == 201
        assert httpx.get(f"{base}/openapi.json", timeout=5).json()["info"]["title"] == "lorebase"
        tools, listed = asyncio.run(mcp_session(f"{base}/mcp", key))
        assert tools == {
            "list_knowledge_bases",
            "search_knowledge_base",
            "read_document",
            "read_surrounding_chunks",
        }
        assert "k" in listed
        assert httpx.post(f"{base}/mcp", json={}, timeout=5).status_code == 401
        # Stateless: no notification stream to open; a GET is refused at once, not left hanging.
        stream = httpx.get(
            f"{base}/mcp", headers=headers | {"Accept": "text/event-stream"}, timeout=5
        )
        assert stream.status_code == 405 and "POST" in stream.headers["allow"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    again = subprocess.run([*command[:-5], "users", "list"], capture_output=True, text=True)
    assert "admin" in again.stdout


def _packages_loaded(pid: int) -> set[str]:
    """The installed packages whose compiled modules process ``pid`` has mapped."""
    site = Path(httpx.__file__).parents[1]  # site-packages, where they are installed
    found = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        path = Path(line.split(maxsplit=5)[-1])
        if path.suffix == ".so" and path.is_relative_to(site):
            found.add(path.relative_to(site).parts[0])
    return found


def test_serve_on_a_port_in_use_says_so_before_announcing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = serve_command(tmp_path, port)
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 4, result.stderr
    assert "serving on" not in result.stdout
    assert f"127.0.0.1:{port}" in result.stderr and "--port" in result.stderr


def test_serve_refuses_to_start_without_the_data_key_of_its_uploads(tmp_path: Path) -> None:
    from lorebase.app import open_lorebase
    from lorebase.embed.fake import FakeEmbedder
    from lorebase.settings import Settings

    with open_lorebase(settings=Settings(data_dir=tmp_path), embedder=FakeEmbedder()) as lb:
        lb.upload(lb.create_kb("mine"), "a.md", [b"# A\n\nText.\n"])
    (tmp_path / "data.key").unlink()
    command = serve_command(tmp_path, free_port())
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 7, result.stderr  # a server fault: an operator must act
    assert "missing" in result.stderr and "restore" in result.stderr
    assert not (tmp_path / "data.key").exists()


def _lorebase(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lorebase", "--data-dir", str(data), "--embedder", "fake", *args]


def test_add_beside_an_idle_server_goes_ahead_and_the_server_finds_it(tmp_path: Path) -> None:
    """A server holds the ingestion lock only while it indexes (issue 35): `lorebase add`
    beside an idle one indexes at once, and the server searches what it added."""
    data, folder = tmp_path / "data", tmp_path / "notes"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nVacation days carry over up to ten days.\n")
    port = free_port()
    process = started(
        serve_command(data, port, "--workers", "1"),
        tmp_path / "serve.log",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        key = [process.stdout.readline() for _ in range(3)][1].strip()
        base = f"http://127.0.0.1:{port}"
        wait_until_ready(base, process)
        added = subprocess.run(
            _lorebase(data, "add", str(folder), "--kb", "notes"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert added.returncode == 0, added.stdout + added.stderr
        assert "notes: 1 file · 1 added" in added.stdout and "waiting" not in added.stdout
        found = httpx.post(
            f"{base}/v1/search",
            json={"query": "vacation carry over"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        )
        assert found.status_code == 200, found.text
        assert found.json()["hits"][0]["path"].endswith("leave.md")
        # What must not run beside a server is refused even while it is idle, naming it.
        backup = tmp_path / "backup"
        assert subprocess.run(_lorebase(data, "backup", str(backup)), timeout=120).returncode == 0
        restore = ["restore", str(backup), "--replace"]
        for command in (["vacuum"], ["keys", "rotate-data-key"], restore):
            refused = subprocess.run(
                _lorebase(data, *command), capture_output=True, text=True, timeout=120
            )
            assert refused.returncode != 0, command
            assert "(lorebase serve) is serving this data directory" in refused.stderr, command
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_add_waits_while_another_process_indexes_and_says_so(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "notes"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nVacation days carry over up to ten days.\n")
    busy = IngestLock(data, "lorebase serve")
    busy.acquire()  # a server in the middle of a job
    adding = subprocess.Popen(
        _lorebase(data, "add", str(folder), "--kb", "notes"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert adding.stdout is not None
        said = adding.stdout.readline()
        assert "waiting:" in said and "(lorebase serve) is indexing" in said, said
        assert adding.poll() is None  # still waiting
        busy.release()
        rest, _ = adding.communicate(timeout=120)
        assert adding.returncode == 0, rest
        assert "notes: 1 file · 1 added" in rest
    finally:
        busy.release()
        if adding.poll() is None:
            adding.kill()
