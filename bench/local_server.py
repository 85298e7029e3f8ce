"""Lorebase servers for the benchmarks: one in this process on a free port of 127.0.0.1
(``bench/web.py``, ``bench/screenshots.py``), and the waiting for one started as a process
(``bench/scale_out.py``, ``bench/lean.py``)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from lorebase.api.app import create_app
from lorebase.app import Lorebase


@contextmanager
def serving(lb: Lorebase, join_seconds: float = 10.0) -> Iterator[str]:
    """``lb``'s API served on a free port until the block ends (then ``lb`` is closed);
    yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(lb), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        lb.events.close()
        thread.join(join_seconds)
        sock.close()
        lb.close()


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(
    base: str, process: subprocess.Popen[bytes], seconds: float, *, log: str = ""
) -> None:
    """Until ``base``/readyz answers 200; ends the benchmark, saying why, when the process
    exits or takes longer than ``seconds`` (``log``: where its messages went)."""
    where = f"; see {log}" if log else ""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"lorebase serve exited ({process.returncode}){where}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    sys.exit(f"lorebase serve did not get ready in {seconds:.0f} s{where}")
