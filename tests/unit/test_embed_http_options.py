"""HttpEmbedder's per-model options (prefixes, truncation) against a stand-in server on
127.0.0.1: what reaches the server, what comes back, and how the identity changes."""

from __future__ import annotations

import hashlib
import json
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

WIDTH = 16


@dataclass
class Stub(Recorder):
    vectors: FakeEmbedder = field(default_factory=lambda: FakeEmbedder(dim=WIDTH))

    def reply(self, request: dict[str, Any]) -> Reply:
        matrix = self.vectors.embed_batch(request["input"], "document") * 3.0  # not unit
        data = [{"index": i, "embedding": row.tolist()} for i, row in enumerate(matrix)]
        return Reply(body=json.dumps({"data": data}).encode())


@pytest.fixture
def server() -> Iterator[tuple[Stub, str]]:
    stub = Stub()
    with running(stub) as base_url:
        yield stub, base_url


def client(url: str, model: str = "stub-model", **kwargs: Any) -> HttpEmbedder:
    return HttpEmbedder(url, model, sleep=lambda _: None, backoff=0.001, **kwargs)


def test_configured_prefixes_reach_the_server(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url, dim=WIDTH, query_prefix="Q: ", document_prefix="D: ") as emb:
        emb.embed_query("where is the manual")
        emb.embed_documents(["the manual is here"])
    assert stub.requests[0]["input"] == ["Q: where is the manual"]
    assert stub.requests[1]["input"] == ["D: the manual is here"]


def test_one_prefix_configured_keeps_the_table_for_the_other(server: tuple[Stub, str]) -> None:
    stub, url = server
    with client(url, "nomic-embed-text", dim=WIDTH, query_prefix="ask: ") as emb:
        emb.embed_query("q")
        emb.embed_documents(["d"])
    assert [r["input"] for r in stub.requests] == [["ask: q"], ["search_document: d"]]


def test_without_prefixes_the_table_applies_and_the_digest_is_the_model_name(
    server: tuple[Stub, str],
) -> None:
    stub, url = server
    with client(url, "nomic-embed-text", dim=WIDTH) as emb:
        emb.embed_query("q")
        identity = emb.identity
    assert stub.requests[0]["input"] == ["search_query: q"]
    assert identity.digest == hashlib.sha256(b"nomic-embed-text").hexdigest()  # stores stay valid
    assert identity.transform == "none"


def test_prefixes_equal_to_the_table_keep_the_identity(server: tuple[Stub, str]) -> None:
    _, url = server
    plain = client(url, "nomic-embed-text", dim=WIDTH).identity
    spelled = client(
        url,
        "nomic-embed-text",
        dim=WIDTH,
        query_prefix="search_query: ",
        document_prefix="search_document: ",
    ).identity
    assert spelled == plain


def test_other_prefixes_change_the_identity(server: tuple[Stub, str]) -> None:
    _, url = server
    plain = client(url, dim=WIDTH).identity
    query = client(url, dim=WIDTH, query_prefix="Q: ").identity
    document = client(url, dim=WIDTH, document_prefix="D: ").identity
    assert len({plain.key, query.key, document.key}) == 3
    assert {plain.model, query.model, document.model} == {"http:stub-model"}


def test_truncation_gives_unit_vectors_of_n_dimensions(server: tuple[Stub, str]) -> None:
    _, url = server
    with client(url, dim=WIDTH, truncate=4) as emb:
        vectors = emb.embed(["one text", "another, longer text"])
        query = emb.embed_query("a question")
    assert vectors.shape == (2, 4)
    assert query.shape == (4,)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    full = FakeEmbedder(dim=WIDTH).embed_batch(["one text"], "document")[0][:4]
    assert np.allclose(vectors[0], full / np.linalg.norm(full), atol=1e-6)  # the first N, kept


def test_truncation_is_in_the_identity_without_a_server_call(server: tuple[Stub, str]) -> None:
    stub, url = server
    full = client(url, dim=WIDTH).identity
    cut = client(url, truncate=4).identity
    assert not stub.requests  # known from the configuration
    assert (cut.dim, cut.transform) == (4, "truncate:4")
    assert cut.key != full.key
    assert client(url, truncate=8).identity.key != cut.key


def test_truncation_still_checks_the_servers_width(server: tuple[Stub, str]) -> None:
    _, url = server
    with client(url, dim=WIDTH * 2, truncate=4) as emb, pytest.raises(Unavailable) as info:
        emb.embed(["x"])
    assert f"returned {WIDTH}-dimensional vectors, expected {WIDTH * 2}" in str(info.value)


def test_truncation_wider_than_the_server_is_unavailable(server: tuple[Stub, str]) -> None:
    _, url = server
    with client(url, truncate=WIDTH + 1) as emb, pytest.raises(Unavailable) as info:
        emb.embed(["x"])
    message = str(info.value)
    assert f"{WIDTH}-dimensional" in message and f"truncate ({WIDTH + 1})" in message
    assert "127.0.0.1" in message


@pytest.mark.parametrize("kwargs", [{"truncate": 0}, {"truncate": 9, "dim": 8}])
def test_bad_truncation_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        HttpEmbedder("http://127.0.0.1:9/v1", "m", **kwargs)
