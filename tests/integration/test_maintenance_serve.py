"""`lorebase backup` beside a real `lorebase serve` taking uploads over HTTP on 127.0.0.1: the
backup restores into a fresh data directory with the same search results and every upload's
original opening, and `lorebase restore` over the served directory is refused, naming the
server's process."""

from __future__ import annotations

import io
import json
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from integration.serve_process import free_port, serve_command, wait_until_ready
from lorebase.cli.main import app

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]
runner = CliRunner()


def lorebase(data: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--data-dir", str(data), "--embedder", "fake", *args])
    return result.exit_code, result.output


def top_chunks(data: Path, query: str) -> list[str]:
    code, output = lorebase(data, "search", query, "--kb", "notes", "--json")
    assert code == 0, output
    return [hit["chunk_id"] for hit in json.loads(output)["hits"]]


def test_backup_while_serving_and_uploading_restores_the_same_results(tmp_path: Path) -> None:
    data, notes = tmp_path / "data", tmp_path / "notes"
    notes.mkdir()
    for number in range(12):
        (notes / f"n{number}.md").write_text(
            f"# Note {number}\n\nThe vacation policy grants {number} days; the budget "
            f"report lists item {number}.\n"
        )
    assert lorebase(data, "add", str(notes), "--kb", "notes")[0] == 0
    before = top_chunks(data, "vacation policy budget")

    port = free_port()
    server = subprocess.Popen(
        serve_command(data, port, "--workers", "1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    stop = threading.Event()
    uploaded: list[str] = []
    try:
        assert server.stdout is not None
        key = [server.stdout.readline() for _ in range(3)][1].strip()
        base = f"http://127.0.0.1:{port}"
        wait_until_ready(base, server)
        headers = {"Authorization": f"Bearer {key}"}
        created = httpx.post(
            f"{base}/v1/knowledge-bases",
            json={"name": "inbox", "scope": "global"},
            headers=headers,
            timeout=10,
        )
        assert created.status_code == 201, created.text
        inbox = created.json()["id"]

        def upload() -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
                number = 0
                while not stop.is_set():
                    body = f"# Upload {number}\n\nA heron waits by pond {number}.\n".encode()
                    files = {"files": (f"u{number}.md", io.BytesIO(body), "text/markdown")}
                    response = client.post(f"/v1/knowledge-bases/{inbox}/documents", files=files)
                    assert response.status_code == 202, response.text
                    uploaded.append(response.json()["documents"][0]["id"])
                    number += 1

        writer = threading.Thread(target=upload)
        writer.start()
        try:
            while len(uploaded) < 3:
                stop.wait(0.05)
            code, output = lorebase(data, "backup", str(tmp_path / "backup"))
            assert code == 0, output
        finally:
            stop.set()
            writer.join()

        code, output = lorebase(data, "restore", str(tmp_path / "backup"), "--replace")
        assert code == 4, output
        assert f"lorebase process {server.pid}" in output
    finally:
        server.terminate()
        server.wait(30)

    fresh = tmp_path / "restored"
    code, output = lorebase(fresh, "restore", str(tmp_path / "backup"))
    assert code == 0, output
    assert top_chunks(fresh, "vacation policy budget") == before
    code, output = lorebase(fresh, "check", "--json")
    assert code == 0, output
    assert len(uploaded) > 3
