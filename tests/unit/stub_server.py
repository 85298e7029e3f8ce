"""A stand-in model server on 127.0.0.1 for the HTTP client tests (embedder, reranker).

A test's stub subclasses :class:`Recorder` and writes :meth:`Recorder.reply`: the scripted
replies (:attr:`Recorder.script`) go first, in order. Everything the server saw is kept.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: status, headers, raw body, and an optional delay before it."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorder:
    """What the stand-in server answers and what it saw."""

    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def answer(self, request: dict[str, Any]) -> Reply:
        return self.script.pop(0) if self.script else self.reply(request)

    def reply(self, request: dict[str, Any]) -> Reply:
        raise NotImplementedError


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the slow-server tests hang up on purpose


def _handler(stub: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            stub.requests.append(request)
            stub.headers.append(dict(self.headers))
            stub.paths.append(self.path)
            reply = stub.answer(request)
            time.sleep(reply.delay)  # a slow server, scripted: the wait is what is tested
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.body)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running(stub: Recorder) -> Iterator[str]:
    """Serve ``stub`` on a free port; yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    httpd = _QuietServer(("127.0.0.1", 0), _handler(stub))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
