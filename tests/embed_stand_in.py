"""A stand-in embedding server on 127.0.0.1: OpenAI-style ``/v1/embeddings`` answering with the
fake embedder's vectors at its own width (so a test can compute what any text should score),
counting what it embedded, and able to hold its answers (``hold_after``) or go away (``stop``)
— a remote model server, its slowness and its outage, without a model.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lorebase.embed.fake import FakeEmbedder

MODEL = "stand-in-embed"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a killed client hangs up mid-answer on purpose


class EmbeddingServer:
    """``dim`` wide vectors of :class:`FakeEmbedder` under the model name :data:`MODEL`."""

    def __init__(self, dim: int) -> None:
        self.model = FakeEmbedder(dim, model=MODEL)
        self.requests = 0
        self.texts = 0
        self.hold_after: int | None = None  # answer this many requests, then hold the rest
        self.released = threading.Event()
        self.holding = threading.Event()  # set once a request is held
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> EmbeddingServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                texts = list(body["input"])
                with server._lock:
                    server.requests += 1
                    held = server.hold_after is not None and server.requests > server.hold_after
                if held:
                    server.holding.set()
                    server.released.wait(60)
                with server._lock:
                    server.texts += len(texts)
                vectors = server.model.embed_batch(texts, "document")
                data = [
                    {"index": i, "embedding": vector.tolist()} for i, vector in enumerate(vectors)
                ]
                payload = json.dumps({"model": MODEL, "data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Go away: connections are refused from now on (``start`` again on the same port)."""
        self.released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def embedders_file(folder: Path, server: EmbeddingServer, *, small: int = 64) -> Path:
    """Two named embedders: ``small``, the fake embedder ``small`` wide (the default), and
    ``remote``, the stand-in server (its relevance floor off: the fake's cosines are low)."""
    path = folder / "embedders.toml"
    path.write_text(
        'default = "small"\n'
        "[embedders.small]\n"
        'kind = "fake"\n'
        f"dimensions = {small}\n"
        "no_answer_threshold = -1.0\n"
        "[embedders.remote]\n"
        f'url = "{server.url}"\n'
        f'model = "{MODEL}"\n'
        f"dimensions = {server.model.dim}\n"
        "batch_size = 8\n"
        "timeout = 5\n"
        "no_answer_threshold = -1.0\n"
    )
    return path
