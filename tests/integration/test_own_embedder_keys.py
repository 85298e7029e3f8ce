"""A user's own key for an HTTP embedder over the real app on both stores, against a stand-in
embedding server that records the keys it is sent: their personal bases are indexed and
searched with it (and no other base is), it is sealed at rest, never shown back or logged,
removable; only HTTP embedders take one; an administrator can forbid them; a data-key
rotation keeps it usable."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embed_stand_in import EmbeddingServer, embedders_file
from integration.store_backends import StoreBackend
from loopback import client as api_client
from lorebase.accounts.access import Caller
from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.registry import PROBE_TEXT
from lorebase.settings import ServeSettings, Settings

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

SECRET = "sk-alice-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    stand_in = EmbeddingServer(dim=48).start()
    yield stand_in
    stand_in.stop()


def open_at(
    tmp_path: Path, server: EmbeddingServer, backend: StoreBackend, **extra: Any
) -> Lorebase:
    environ = {
        "LOREBASE_EMBEDDERS": str(embedders_file(tmp_path, server)),
        "LOREBASE_EMBEDDER": "fake",
    }
    found = Settings.from_env(tmp_path / "data", environ=environ)
    settings = backend.settings(
        found.data_dir,
        embed=found.embed,
        embedders=found.embedders,
        default_embedder=found.default_embedder,
        serve=ServeSettings(workers=1, watch=False),
        **extra,
    )
    return open_lorebase(settings=settings, data_key=backend.data_key())


class Env:
    def __init__(self, lb: Lorebase) -> None:
        self.lb = lb
        self.keys: dict[str, str] = {}
        accounts = lb.accounts
        team = accounts.create_team("eng")
        for name in ("alice", "bob"):
            user = accounts.create_user(name, Role.MEMBER)
            self.keys[name], _ = accounts.create_key(user.id)
            accounts.set_member(team.id, user.id, Role.ADMIN)
        lb.start_serving()
        self.client = api_client(create_app(lb, manage=False), raise_server_exceptions=False)

    def as_(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}

    def base(self, user: str, name: str, **body: str) -> int:
        sent = {"name": name, "embedder": "remote"} | body
        made = self.client.post("/v1/knowledge-bases", json=sent, headers=self.as_(user))
        assert made.status_code == 201, made.text
        kb_id: int = made.json()["id"]
        files = {
            "files": (f"{name}.md", f"# {name}\n\nHerons of {name}.\n".encode(), "text/markdown")
        }
        up = self.client.post(
            f"/v1/knowledge-bases/{kb_id}/documents", files=files, headers=self.as_(user)
        )
        assert up.status_code == 202, up.text
        assert self.lb.queue.join(30)
        return kb_id

    def search(self, user: str, kb_id: int, query: str) -> None:
        body = {"query": query, "knowledge_bases": [kb_id], "mode": "dense"}
        found = self.client.post("/v1/search", json=body, headers=self.as_(user))
        assert found.status_code == 200 and found.json()["hits"], found.text


@pytest.fixture
def env(tmp_path: Path, server: EmbeddingServer, backend: StoreBackend) -> Iterator[Env]:
    lb = open_at(tmp_path, server, backend)
    environment = Env(lb)
    yield environment
    lb.close()


def sent_keys(server: EmbeddingServer, since: int) -> set[str | None]:
    """The keys the server was sent with texts to embed (reachability probes left out: they
    are made with the server's configured key)."""
    return {
        headers.get("Authorization")
        for headers, request in zip(server.headers[since:], server.requests[since:], strict=True)
        if request["input"] != [PROBE_TEXT]
    }


def test_a_personal_base_is_embedded_and_searched_with_its_owners_key(
    env: Env, server: EmbeddingServer, backend: StoreBackend, tmp_path: Path, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    kept = env.client.put(
        "/v1/embedder-keys/remote", json={"key": SECRET}, headers=env.as_("alice")
    )
    assert kept.status_code == 204
    start = len(server.headers)
    mine = env.base("alice", "alice-notes")
    env.search("alice", mine, "herons of alice")
    assert sent_keys(server, start) == {f"Bearer {SECRET}"}
    # Nobody else's base uses it: bob's personal base, alice's team's base.
    start = len(server.headers)
    theirs = env.base("bob", "bob-notes")
    team = env.base("alice", "eng-docs", scope="team", team="eng")
    env.search("bob", theirs, "herons of bob")
    env.search("alice", team, "herons of eng")
    assert sent_keys(server, start) == {None}
    # Listed by name, never shown back; sealed at rest; never logged or audited.
    listed = env.client.get("/v1/embedder-keys", headers=env.as_("alice")).json()
    assert [k["embedder"] for k in listed] == ["remote"] and SECRET not in str(listed)
    assert env.client.get("/v1/embedder-keys", headers=env.as_("bob")).json() == []
    sealed = backend.rows(tmp_path / "data", "SELECT sealed FROM user_embedder_keys")
    assert len(sealed) == 1 and SECRET not in sealed[0][0]
    assert SECRET not in caplog.text
    assert all(SECRET not in e.target for e in env.lb.accounts.audit_log())
    assert "set_embedder_key" in {e.action for e in env.lb.accounts.audit_log()}
    # Removed: the server's own key (none here) again, at once.
    gone = env.client.delete("/v1/embedder-keys/remote", headers=env.as_("alice"))
    assert gone.status_code == 204
    start = len(server.headers)
    env.search("alice", mine, "herons of alice, once more")
    assert sent_keys(server, start) == {None}
    again = env.client.delete("/v1/embedder-keys/remote", headers=env.as_("alice"))
    assert again.status_code == 404


def test_only_http_embedders_take_a_key(env: Env) -> None:
    local = env.client.put(
        "/v1/embedder-keys/small", json={"key": SECRET}, headers=env.as_("alice")
    )
    assert local.status_code == 422 and "only HTTP embedders" in local.json()["detail"]
    assert SECRET not in local.text
    unknown = env.client.put(
        "/v1/embedder-keys/nope", json={"key": SECRET}, headers=env.as_("alice")
    )
    assert unknown.status_code == 404
    spaced = env.client.put(
        "/v1/embedder-keys/remote", json={"key": "two words"}, headers=env.as_("alice")
    )
    assert spaced.status_code == 422 and "two words" not in spaced.text


def test_an_administrator_can_forbid_own_keys(
    tmp_path: Path, server: EmbeddingServer, backend: StoreBackend
) -> None:
    lb = open_at(tmp_path, server, backend)
    with lb:
        env = Env(lb)
        env.client.put("/v1/embedder-keys/remote", json={"key": SECRET}, headers=env.as_("alice"))
    forbidding = open_at(tmp_path, server, backend, user_embedder_keys=False)
    with forbidding:
        env = Env.__new__(Env)
        env.lb, env.keys = forbidding, {}
        for name in ("alice",):
            user = forbidding.accounts.get_user(name)
            env.keys[name], _ = forbidding.accounts.create_key(user.id)
        forbidding.start_serving()
        env.client = api_client(create_app(forbidding, manage=False), raise_server_exceptions=False)
        refused = env.client.put(
            "/v1/embedder-keys/remote", json={"key": SECRET}, headers=env.as_("alice")
        )
        assert refused.status_code == 403 and "administrator" in refused.json()["detail"]
        start = len(server.headers)
        mine = env.base("alice", "alice-notes")  # the kept key is not used either
        env.search("alice", mine, "herons of alice")
        assert sent_keys(server, start) == {None}


def test_a_rotation_of_the_data_key_keeps_it_usable(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    environ = {
        "LOREBASE_EMBEDDERS": str(embedders_file(tmp_path, server)),
        "LOREBASE_EMBEDDER": "fake",
    }
    settings = Settings.from_env(tmp_path / "data", environ=environ)
    with open_lorebase(settings=settings) as lb:
        alice = Caller(lb.accounts.create_user("alice"))
        lb.set_embedder_key(alice, "remote", SECRET)
        assert lb.rotate_data_key().names == 1  # the key, sealed again
    with open_lorebase(settings=settings) as lb:
        kb = lb.create_kb("mine", embedder="remote", caller=alice)
        start = len(server.headers)
        lb.search("herons", kb=kb, mode="dense")
        assert sent_keys(server, start) == {f"Bearer {SECRET}"}


def test_an_owners_key_failing_leaves_the_embedder_up_for_everyone_else(
    env: Env, server: EmbeddingServer
) -> None:
    from unit.stub_server import Reply

    mine = env.base("alice", "alice-notes")
    theirs = env.base("bob", "bob-notes")
    env.client.put("/v1/embedder-keys/remote", json={"key": SECRET}, headers=env.as_("alice"))
    server.script = [Reply(status=503, body=b"{}")] * 4  # the server refuses alice (over quota)
    body = {"query": "herons of alice", "knowledge_bases": [mine], "mode": "dense"}
    refused = env.client.post("/v1/search", json=body, headers=env.as_("alice")).json()
    assert any("embedder_unavailable" in w for w in refused["warnings"])
    assert SECRET not in str(refused)
    server.script = []
    body = {"query": "herons of bob", "knowledge_bases": [theirs], "mode": "dense"}
    answered = env.client.post("/v1/search", json=body, headers=env.as_("bob")).json()
    assert answered["hits"] and not answered["warnings"]
