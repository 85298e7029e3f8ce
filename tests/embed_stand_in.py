"""A stand-in embedding server on 127.0.0.1: OpenAI-style ``/v1/embeddings`` answering with the
fake embedder's vectors at its own width (so a test can compute what any text should score),
counting what it embedded, and able to hold its answers (``hold_after``) or go away (``stop``)
— a remote model server, its slowness and its outage, without a model.
"""

from __future__ import annotations

import json
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from lorebase.embed.fake import FakeEmbedder
from unit.stub_server import Recorder, Reply, running

MODEL = "stand-in-embed"


class EmbeddingServer(Recorder):
    """``dim`` wide vectors of :class:`FakeEmbedder` under the model name :data:`MODEL`, served
    by the tests' stand-in server (:func:`unit.stub_server.running`); ``requests`` holds what
    it was sent, ``texts`` counts what it answered."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.model = FakeEmbedder(dim, model=MODEL)
        self.texts = 0
        self.hold_after: int | None = None  # answer this many requests, then hold the rest
        self.released = threading.Event()
        self.holding = threading.Event()  # set once a request is held
        self.url = ""
        self._serving = ExitStack()
        self._lock = threading.Lock()

    def start(self) -> EmbeddingServer:
        self.url = self._serving.enter_context(running(self))
        return self

    def stop(self) -> None:
        """Go away: connections are refused from now on."""
        self.released.set()
        self._serving.close()

    def reply(self, request: dict[str, Any]) -> Reply:
        texts = list(request["input"])
        if self.hold_after is not None and len(self.requests) > self.hold_after:
            self.holding.set()
            self.released.wait(60)
        with self._lock:
            self.texts += len(texts)
        vectors = self.model.embed_batch(texts, "document")
        data = [{"index": i, "embedding": vector.tolist()} for i, vector in enumerate(vectors)]
        return Reply(body=json.dumps({"model": MODEL, "data": data}).encode())


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
