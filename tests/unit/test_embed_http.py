"""HttpEmbedder against a stand-in OpenAI-compatible server on 127.0.0.1 (port 0).

Sockets are blocked for the suite; these tests re-enable them and only ever connect to
127.0.0.1. Retry waits go through an injected ``sleep`` that records instead of sleeping.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from lorebase.embed.fake import FakeEmbedder
from lorebase.embed.http import HttpEmbedder
from lorebase.errors import InvalidInput, Unavailable
from unit.stub_server import Recorder, Reply, running

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

DIM = 8
SECRET = "confidential-merger-plan-zebra"


@dataclass
class Stub(Recorder):
    """What the stand-in server answers and what it saw."""

    model_reported: str = "stub-model:latest"
    vectors: FakeEmbedder = field(default_factory=lambda: FakeEmbedder(dim=DIM))

    def reply(self, request: dict[str, Any]) -> Reply:
        texts = request["input"]
        matrix = self.vectors.embed_batch(texts, "document")
        data = [
            {"object": "embedding", "index": i, "embedding": matrix[i].tolist()}
            for i in range(len(texts))
        ]
        data.reverse()  # out of order on purpose: the client must sort by index
        body = {"object": "list", "model": self.model_reported, "data": data}
        return Reply(body=json.dumps(body).encode())


@pytest.fixture
def server() -> Iterator[tuple[Stub, str]]:
    stub = Stub()
    with running(stub) as base_url:
        yield stub, base_url


def client(base_url: str, sleeps: list[float] | None = None, **kwargs: Any) -> HttpEmbedder:
    recorded = sleeps if sleeps is not None else []
    kwargs.setdefault("backoff", 0.001)
    return HttpEmbedder(base_url, "stub-model", sleep=recorded.append, **kwargs)


def test_happy_path_sorts_by_index(server: tuple[Stub, str]) -> None:
    stub, url = server
    texts = ["short", "a somewhat longer text", "mid length"]
    with client(url, dim=DIM) as emb:
        got = emb.embed(texts)
    assert np.allclose(got, FakeEmbedder(dim=DIM).embed(texts), atol=1e-6)
    assert stub.requests[0]["model"] == "stub-model"
    assert emb.reported_model == "stub-model:latest"


def test_batches_of_batch_size(server: tuple[Stub, str]) -> None:
    stub, url = server
    texts = [f"text number {i}" for i in range(70)]
    with client(url, dim=DIM, batch_size=32) as emb:
        assert emb.embed(texts).shape == (70, DIM)
    assert [len(r["input"]) for r in stub.requests] == [32, 32, 6]


def test_api_key_is_sent_as_bearer(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url, dim=DIM, api_key="sk-test") as emb:
        emb.embed(["x"])
    assert stub.headers[0]["Authorization"] == "Bearer sk-test"


def test_503_then_success_is_retried(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(status=503)]
    sleeps: list[float] = []
    with client(url, sleeps, dim=DIM) as emb:
        assert emb.embed(["hello"]).shape == (1, DIM)
    assert len(stub.requests) == 2
    assert len(sleeps) == 1


def test_429_honours_retry_after_capped(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [
        Reply(status=429, headers={"Retry-After": "2"}),
        Reply(status=429, headers={"Retry-After": "9999"}),
    ]
    sleeps: list[float] = []
    with client(url, sleeps, dim=DIM, max_retry_after=5.0) as emb:
        emb.embed(["hello"])
    assert sleeps == [2.0, 5.0]


def test_persistent_500_becomes_unavailable(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(status=500) for _ in range(3)]
    sleeps: list[float] = []
    with client(url, sleeps, dim=DIM, max_retries=2) as emb, pytest.raises(Unavailable) as info:
        emb.embed([SECRET])
    assert "HTTP 500" in str(info.value)
    assert SECRET not in str(info.value)
    assert len(stub.requests) == 3
    assert len(sleeps) == 2
    assert sleeps[1] > sleeps[0] * 0.9  # backoff grows (jitter is at most half a step)


def test_down_server_is_unavailable_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps: list[float] = []
    start = time.monotonic()
    down = client(f"http://127.0.0.1:{port}/v1", sleeps, dim=DIM)
    with down, pytest.raises(Unavailable) as info:
        down.embed([SECRET])
    message = str(info.value)
    assert time.monotonic() - start < 3.0
    assert f"127.0.0.1:{port}" in message
    assert "did not answer" in message and "--embed-url" in message
    assert SECRET not in message
    assert len(sleeps) == 3


def test_slow_server_times_out(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(delay=0.6), Reply(delay=0.6)]
    emb = client(url, dim=DIM, read_timeout=0.15, max_retries=1)
    with emb, pytest.raises(Unavailable, match="timed out"):
        emb.embed(["hello"])


def test_400_is_invalid_input_without_the_text(server: tuple[Stub, str]) -> None:
    stub, url = server
    echo = {"error": {"message": f"input '{SECRET}' is too long", "code": "context_length"}}
    stub.script = [Reply(status=400, body=json.dumps(echo).encode())]
    with client(url, dim=DIM) as emb, pytest.raises(InvalidInput) as info:
        emb.embed([SECRET])
    message = str(info.value)
    assert "HTTP 400" in message and "context_length" in message
    assert SECRET not in message
    assert len(stub.requests) == 1  # refusals are not retried


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"data": "nope"}',
        b'{"data": [{"index": 0, "embedding": [0.1, 0.2]}]}',  # 1 item for 2 texts
        b'{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]}',
        b'{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1]}]}',
    ],
)
def test_malformed_answers_are_unavailable(server: tuple[Stub, str], body: bytes) -> None:
    stub, url = server
    stub.script = [Reply(body=body)]
    with client(url) as emb, pytest.raises(Unavailable, match="OpenAI-style"):
        emb.embed_batch(["one", "two"], "document")


def test_dimension_learned_by_probe(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url) as emb:
        assert emb.dim is None
        identity = emb.identity
        assert identity.dim == DIM
        assert identity.model == "http:stub-model"
        assert identity.transform == "none"
        assert stub.requests[0]["input"] == ["dimension probe"]
        assert emb.identity == identity  # no second probe
        assert len(stub.requests) == 1


def test_identity_does_not_depend_on_calls(server: tuple[Stub, str]) -> None:
    _, url = server
    before = client(url, dim=DIM).identity
    with client(url, dim=DIM) as emb:
        emb.embed(["hello"])
        assert emb.identity == before


def test_configured_dimension_mismatch(server: tuple[Stub, str]) -> None:
    _, url = server
    with client(url, dim=DIM + 1) as emb, pytest.raises(Unavailable, match="dimensional"):
        emb.embed(["hello"])


def test_texts_are_never_logged(server: tuple[Stub, str], caplog: pytest.LogCaptureFixture) -> None:
    _, url = server
    caplog.set_level(logging.DEBUG)
    with client(url, dim=DIM) as emb:
        emb.embed([SECRET])
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "localhost:11434"},
        {"model": ""},
        {"dim": 0},
        {"batch_size": 0},
        {"read_timeout": 0},
        {"max_retries": -1},
    ],
)
def test_bad_settings(kwargs: dict[str, Any]) -> None:
    settings = {"base_url": "http://127.0.0.1:1/v1", "model": "m"} | kwargs
    with pytest.raises(InvalidInput):
        HttpEmbedder(**settings)
