"""HttpReranker against a stand-in reranking server on 127.0.0.1 (port 0).

Sockets are blocked for the suite; these tests re-enable them and only ever connect to
127.0.0.1. Retry waits go through an injected ``sleep`` that records instead of sleeping.
The stand-in scores with :class:`FakeReranker`, so expected scores are known exactly.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

import pytest

from lorebase.errors import InvalidInput, Unavailable
from lorebase.rerank.fake import FakeReranker
from lorebase.rerank.http import HttpReranker
from unit.stub_server import Recorder, Reply, running

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SECRET = "confidential-merger-plan-zebra"
PASSAGE_SECRET = "passage-about-the-secret-walrus"
QUERY = "vacation policy"
PASSAGES = [
    "the vacation policy grants 25 days",
    "expense reports are due monthly",
    "policy on remote work",
    "vacation days roll over",
]


@dataclass
class Stub(Recorder):
    """What the stand-in server answers and what it saw."""

    shape: str = "results"  # "results" (Cohere/Jina/llama.cpp/vLLM) or "tei"
    shuffle: random.Random = field(default_factory=lambda: random.Random(7))

    def reply(self, request: dict[str, Any]) -> Reply:
        documents = request["documents"]
        scores = FakeReranker().score(request["query"], documents)
        key = "score" if self.shape == "tei" else "relevance_score"
        results = [{"index": i, key: s} for i, s in enumerate(scores)]
        self.shuffle.shuffle(results)  # any order: the client must sort by index
        if self.shape == "tei":
            body: Any = results
        else:
            body = {"model": request["model"], "results": results, "usage": {"total_tokens": 1}}
        return Reply(body=json.dumps(body).encode())


@pytest.fixture
def server() -> Iterator[tuple[Stub, str]]:
    stub = Stub()
    with running(stub) as base_url:
        yield stub, base_url


def client(base_url: str, sleeps: list[float] | None = None, **kwargs: Any) -> HttpReranker:
    recorded = sleeps if sleeps is not None else []
    kwargs.setdefault("backoff", 0.001)
    return HttpReranker(base_url, "stub-reranker", sleep=recorded.append, **kwargs)


@pytest.mark.parametrize("shape", ["results", "tei"])
def test_both_answer_shapes_come_back_in_passage_order(
    server: tuple[Stub, str], shape: str
) -> None:
    stub, url = server
    stub.shape = shape
    with client(url) as reranker:
        got = reranker.rerank(QUERY, PASSAGES)
    assert got == FakeReranker().score(QUERY, PASSAGES)  # the stand-in shuffled its results


def test_request_shape(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url + "/") as reranker:
        reranker.score(QUERY, PASSAGES)
    assert stub.paths == ["/v1/rerank"]
    assert stub.requests == [
        {"model": "stub-reranker", "query": QUERY, "documents": PASSAGES, "top_n": 4}
    ]
    assert reranker.model == "stub-reranker"


def test_batches_of_batch_size(server: tuple[Stub, str]) -> None:
    stub, url = server
    passages = [f"vacation note {i} " + "x" * i for i in range(70)]
    with client(url, batch_size=32) as reranker:
        got = reranker.rerank(QUERY, passages)
    assert [len(r["documents"]) for r in stub.requests] == [32, 32, 6]
    assert [r["top_n"] for r in stub.requests] == [32, 32, 6]
    assert got == FakeReranker().score(QUERY, passages)


def test_no_passages_no_request(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url) as reranker:
        assert reranker.score(QUERY, []) == []
        assert reranker.rerank(QUERY, []) == []
    assert stub.requests == []


def test_api_key_is_sent_as_bearer(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url, api_key="sk-test") as reranker:
        reranker.score(QUERY, PASSAGES)
    assert stub.headers[0]["Authorization"] == "Bearer sk-test"


def test_no_api_key_no_authorization_header(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url) as reranker:
        reranker.score(QUERY, PASSAGES)
    assert "Authorization" not in stub.headers[0]


def test_503_then_success_is_retried(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(status=503)]
    sleeps: list[float] = []
    with client(url, sleeps) as reranker:
        assert reranker.rerank(QUERY, PASSAGES) == FakeReranker().score(QUERY, PASSAGES)
    assert len(stub.requests) == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (3600, 5.0),  # an HTTP date an hour ahead, capped
        (-3600, 0.0),  # already past
        (None, None),  # unreadable: our own backoff
    ],
)
def test_retry_after_dates(
    server: tuple[Stub, str], offset: int | None, expected: float | None
) -> None:
    """The dates are made when the test runs, not when it is collected (so that every
    worker of a parallel run collects the same tests)."""
    retry_after = "soon" if offset is None else formatdate(time.time() + offset, usegmt=True)
    stub, url = server
    stub.script = [Reply(status=429, headers={"Retry-After": retry_after})]
    sleeps: list[float] = []
    with client(url, sleeps, backoff=0.01, max_retry_after=5.0) as reranker:
        reranker.score(QUERY, PASSAGES)
    assert len(sleeps) == 1
    if expected is None:
        assert 0.005 <= sleeps[0] <= 0.01
    else:
        assert sleeps[0] == expected


def test_persistent_500_becomes_unavailable(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(status=500, body=json.dumps({"error": SECRET}).encode())] * 3
    sleeps: list[float] = []
    reranker = client(url, sleeps, max_retries=2)
    with reranker, pytest.raises(Unavailable) as info:
        reranker.rerank(SECRET, [PASSAGE_SECRET])
    message = str(info.value)
    assert "HTTP 500" in message and "reranking server" in message
    assert SECRET not in message and PASSAGE_SECRET not in message
    assert len(stub.requests) == 3
    assert len(sleeps) == 2


def test_an_answer_that_does_not_decode_is_unavailable(server: tuple[Stub, str]) -> None:
    """A body announced as gzip that is not: httpx raises DecodingError, which is neither a
    transport error nor a status; it must still end as Unavailable, never escape."""
    stub, url = server
    garbage = Reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"})
    stub.script = [garbage, garbage]
    with client(url, max_retries=1) as reranker, pytest.raises(Unavailable) as info:
        reranker.rerank(SECRET, [PASSAGE_SECRET])
    assert "could not be read" in str(info.value) and SECRET not in str(info.value)
    assert len(stub.requests) == 2


def test_down_server_is_unavailable_quickly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps: list[float] = []
    start = time.monotonic()
    down = client(f"http://127.0.0.1:{port}/v1", sleeps)
    with down, pytest.raises(Unavailable) as info:
        down.rerank(SECRET, [PASSAGE_SECRET])
    message = str(info.value)
    assert time.monotonic() - start < 3.0
    assert f"127.0.0.1:{port}" in message
    assert "did not answer" in message and "LOREBASE_RERANK_URL" in message
    assert "LOREBASE_RERANK_URL" in message
    assert SECRET not in message and PASSAGE_SECRET not in message
    assert len(sleeps) == 3


def test_slow_server_times_out(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(delay=0.6), Reply(delay=0.6)]
    reranker = client(url, read_timeout=0.15, max_retries=1)
    with reranker, pytest.raises(Unavailable, match="timed out"):
        reranker.rerank(QUERY, PASSAGES)


def test_400_is_invalid_input_without_the_query(server: tuple[Stub, str]) -> None:
    stub, url = server
    echo = {"error": {"message": f"query '{SECRET}' is too long", "code": "context_length"}}
    stub.script = [Reply(status=400, body=json.dumps(echo).encode())]
    with client(url) as reranker, pytest.raises(InvalidInput) as info:
        reranker.rerank(SECRET, [PASSAGE_SECRET])
    message = str(info.value)
    assert "HTTP 400" in message and "context_length" in message
    assert SECRET not in message and PASSAGE_SECRET not in message
    assert len(stub.requests) == 1  # refusals are not retried


def _results(*items: object) -> bytes:
    return json.dumps({"results": list(items)}).encode()


GOOD = {"index": 0, "relevance_score": 0.5}


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"results": "nope"}',
        b'{"data": [{"index": 0, "score": 1}, {"index": 1, "score": 2}]}',  # no results list
        b"42",
        _results(GOOD),  # 1 result for 2 passages
        _results(GOOD, GOOD, {"index": 1, "relevance_score": 0.1}),  # 3 for 2
        _results(GOOD, {"relevance_score": 0.1}),  # an index missing
        _results(GOOD, {"index": 0, "relevance_score": 0.1}),  # an index repeated
        _results(GOOD, {"index": 2, "relevance_score": 0.1}),  # out of range
        _results(GOOD, {"index": -1, "relevance_score": 0.1}),
        _results(GOOD, {"index": "1", "relevance_score": 0.1}),
        _results(GOOD, {"index": True, "relevance_score": 0.1}),
        _results(GOOD, {"index": 1.0, "relevance_score": 0.1}),
        _results(GOOD, {"index": 1}),  # no score
        _results(GOOD, {"index": 1, "relevance_score": SECRET}),  # not a number
        _results(GOOD, {"index": 1, "relevance_score": None}),
        _results(GOOD, {"index": 1, "relevance_score": True}),
        _results(GOOD, {"index": 1, "relevance_score": [0.1]}),
        _results(GOOD, {"index": 1, "relevance_score": 0.1, "document": {"text": SECRET}}, 7),
        _results(GOOD, [1, 0.1]),  # not an object
        b'{"results": [{"index": 0, "relevance_score": 0.5},'
        b' {"index": 1, "relevance_score": NaN}]}',
        b'[{"index": 0, "score": 0.5}, {"index": 1, "score": Infinity}]',
        b'[{"index": 0, "score": 0.5}, {"index": 0, "score": 0.4}]',
        b'[{"index": 0, "score": 0.5}]',
    ],
)
def test_malformed_answers_are_unavailable(server: tuple[Stub, str], body: bytes) -> None:
    stub, url = server
    stub.script = [Reply(body=body)]
    with client(url) as reranker, pytest.raises(Unavailable) as info:
        reranker.rerank(SECRET, ["one", PASSAGE_SECRET])
    message = str(info.value)
    assert "reranking server" in message and "not a list of rerank results" in message
    assert "LOREBASE_RERANK_URL" in message
    assert SECRET not in message and PASSAGE_SECRET not in message
    assert len(stub.requests) == 1  # a wrong answer is not retried


def test_integer_scores_are_accepted(server: tuple[Stub, str]) -> None:
    stub, url = server
    stub.script = [Reply(body=b'[{"index": 1, "score": 3}, {"index": 0, "score": -2}]')]
    with client(url) as reranker:
        assert reranker.rerank(QUERY, ["a", "b"]) == [-2.0, 3.0]


def test_query_and_passages_are_never_logged(
    server: tuple[Stub, str], caplog: pytest.LogCaptureFixture
) -> None:
    stub, url = server
    caplog.set_level(logging.DEBUG)
    with client(url) as reranker:
        stub.script = [Reply(status=503)]
        reranker.rerank(SECRET, [PASSAGE_SECRET])  # retried, then answered
        stub.script = [Reply(status=400)]
        with pytest.raises(InvalidInput):
            reranker.rerank(SECRET, [PASSAGE_SECRET])
        stub.script = [Reply(body=b"[]")]
        with pytest.raises(Unavailable):
            reranker.rerank(SECRET, [PASSAGE_SECRET])
    assert len(stub.requests) == 4
    assert SECRET not in caplog.text and PASSAGE_SECRET not in caplog.text


def test_close_then_use_reopens(server: tuple[Stub, str]) -> None:
    stub, url = server
    reranker = client(url)
    reranker.score(QUERY, PASSAGES)
    reranker.close()
    reranker.close()  # twice is fine
    assert reranker.score(QUERY, PASSAGES) == FakeReranker().score(QUERY, PASSAGES)
    reranker.close()
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    ("base_url", "host"),
    [
        ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
        ("https://rerank.example/v1", "rerank.example:443"),
        ("http://user:pw@rerank.example/v1?key=abc", "rerank.example:80"),
        ("http://[::1]:9000/v1", "[::1]:9000"),
    ],
)
def test_host_label_is_host_and_port_only(base_url: str, host: str) -> None:
    assert HttpReranker(base_url, "m").host == host


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"base_url": "localhost:8080"}, "LOREBASE_RERANK_URL"),
        ({"base_url": "127.0.0.1:8080/v1"}, "LOREBASE_RERANK_URL"),
        ({"base_url": "ftp://127.0.0.1/v1"}, "LOREBASE_RERANK_URL"),
        ({"base_url": "http:///v1"}, "LOREBASE_RERANK_URL"),
        ({"base_url": "http://127.0.0.1:port/v1"}, "LOREBASE_RERANK_URL"),
        ({"base_url": ""}, "LOREBASE_RERANK_URL"),
        ({"model": ""}, "LOREBASE_RERANK_MODEL"),
        ({"batch_size": 0}, "batch size"),
        ({"read_timeout": 0}, "timeouts"),
        ({"connect_timeout": -1}, "timeouts"),
        ({"max_retries": -1}, "negative"),
        ({"backoff": -0.5}, "negative"),
    ],
)
def test_bad_settings(kwargs: dict[str, Any], says: str) -> None:
    settings = {"base_url": "http://127.0.0.1:1/v1", "model": "m"} | kwargs
    with pytest.raises(InvalidInput, match=says):
        HttpReranker(**settings)
