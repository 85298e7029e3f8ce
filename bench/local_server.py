"""A lorebase server in this process, on a free port of 127.0.0.1, for the benchmarks that
drive the page or the API (``bench/web.py``, ``bench/screenshots.py``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
