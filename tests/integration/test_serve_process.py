"""`lorebase serve` as a real process on 127.0.0.1: first-start key, health, a search."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from integration.serve_process import free_port, serve_command, wait_until_ready

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
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        key = lines[1].strip()
        assert key.startswith("lb_"), lines
        base = f"http://127.0.0.1:{port}"
        assert f"open {base}/ in a browser" in lines[2], lines  # the web page's address
        wait_until_ready(base, process)
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
