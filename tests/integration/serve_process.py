"""`lorebase serve` as a real process for the tests: its command line, a free port, waiting
until it answers."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from waiting import wait_until

READY_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_command(data: Path, port: int, *options: str) -> list[str]:
    """`lorebase serve` over ``data`` on 127.0.0.1:``port`` with the fake embedder."""
    return [
        sys.executable,
        "-m",
        "lorebase",
        "--data-dir",
        str(data),
        "--embedder",
        "fake",
        "serve",
        "--port",
        str(port),
        *options,
    ]


def started(command: list[str], log: Path, **options: Any) -> subprocess.Popen[Any]:
    """``command`` started with its stderr (the server's log) written to ``log``: a pipe
    nobody reads fills at 64 kB — ~780 access lines, what waiting on a slow start writes —
    and the server then blocks on its next log line, answering and stopping nothing."""
    with log.open("ab") as stderr:
        return subprocess.Popen(command, stderr=stderr, **options)


def wait_until_ready(base: str, process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Until ``base``/readyz answers 200; fails if the process exits or takes too long."""

    def ready() -> bool:
        assert process.poll() is None, "lorebase serve exited"
        try:
            return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ready, READY_SECONDS, what="lorebase serve to get ready", interval=0.05)
