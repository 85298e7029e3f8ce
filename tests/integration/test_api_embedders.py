"""GET /v1/embedders through the real app: any signed-in caller sees the named embedders of
the embedders file and whether each answers, never an API key or a URL's password."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from embedders_file import KEY, PASSWORD, write_embedders
from loopback import client as api_client
from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    _, environ = write_embedders(tmp_path)
    settings = Settings.from_env(tmp_path / "data", environ)
    lb = open_lorebase(
        settings=Settings(
            data_dir=settings.data_dir,
            serve=ServeSettings(workers=1, watch=False),
            embedders=settings.embedders,
            default_embedder=settings.default_embedder,
        ),
        embedder=FakeEmbedder(),
    )
    user = lb.accounts.create_user("alice", Role.MEMBER)
    key, _ = lb.accounts.create_key(user.id)
    try:
        yield (
            api_client(create_app(lb, manage=False), raise_server_exceptions=False),
            key,
        )
    finally:
        lb.close()


def test_a_member_sees_every_embedder(served: tuple[TestClient, str]) -> None:
    client, key = served
    response = client.get("/v1/embedders", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    rows = {row["name"]: row for row in response.json()}
    assert list(rows) == ["bundled", "remote", "tiny"]
    remote = rows["remote"]
    assert remote["reachable"] is False and "127.0.0.1" in remote["detail"]
    assert remote["url"].startswith("http://127.0.0.1:")
    assert (remote["dimensions"], remote["truncate"], remote["query_prefix"]) == (768, 256, "ask: ")
    assert rows["tiny"]["default"] is True and rows["tiny"]["reachable"] is True
    assert rows["bundled"]["model"] == "all-MiniLM-L6-v2"
    assert "api_key" not in remote
    assert KEY not in response.text and PASSWORD not in response.text


def test_check_false_skips_the_probes(served: tuple[TestClient, str]) -> None:
    client, key = served
    response = client.get(
        "/v1/embedders", params={"check": "false"}, headers={"Authorization": f"Bearer {key}"}
    )
    assert {row["reachable"] for row in response.json()} == {None}


def test_without_a_key_it_is_refused(served: tuple[TestClient, str]) -> None:
    client, _ = served
    response = client.get("/v1/embedders")
    assert response.status_code == 401
    assert KEY not in response.text


def test_the_schema_documents_every_field(served: tuple[TestClient, str]) -> None:
    client, _ = served
    schema = client.get("/openapi.json").json()
    fields = schema["components"]["schemas"]["EmbedderOut"]["properties"]
    assert "api_key" not in fields
    assert all(field.get("description") for field in fields.values()), json.dumps(fields)
