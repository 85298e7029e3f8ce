"""The REST API through the real app: scopes, uploads, the queue, deletes, errors, logs."""

from __future__ import annotations

import io
import logging
import re
import sqlite3
import threading
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from fastapi.testclient import TestClient

from integration.store_backends import StoreBackend
from loopback import client as api_client
from lorebase.accounts.base import Role, User
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput, NotFound
from lorebase.rerank.fake import FakeReranker
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

if TYPE_CHECKING:
    from httpx2 import Response  # what starlette's TestClient answers with

SECRET_NAME = "quarterly-merger-plans.md"
SECRET_TEXT = "# Merger\n\nThe codename for the merger is BLUEHERON and it closes in May.\n"


@dataclass
class Env:
    lb: Lorebase
    client: TestClient
    keys: dict[str, str]

    def as_(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}


def build(
    tmp_path: Path, backend: StoreBackend, *, start: bool = True, queue_size: int = 16
) -> Env:
    serve = ServeSettings(workers=1, watch=False, queue_size=queue_size)
    lb = open_lorebase(
        settings=backend.settings(tmp_path / "data", serve=serve),
        embedder=FakeEmbedder(),
        data_key=backend.data_key(),
    )
    accounts = lb.accounts
    keys = {}
    users = {"admin": Role.ADMIN, "alice": Role.MEMBER, "bob": Role.MEMBER, "carol": Role.MEMBER}
    ids = {}
    for name, role in users.items():
        user = accounts.create_user(name, role)
        ids[name] = user.id
        keys[name], _ = accounts.create_key(user.id)
    eng = accounts.create_team("eng")
    accounts.set_member(eng.id, ids["alice"], Role.ADMIN)
    accounts.set_member(eng.id, ids["bob"], Role.MEMBER)
    if start:
        lb.start_serving()
    client = api_client(create_app(lb, manage=False), raise_server_exceptions=False)
    return Env(lb, client, keys)


@pytest.fixture
def env(tmp_path: Path, backend: StoreBackend) -> Iterator[Env]:
    environment = build(tmp_path, backend)
    yield environment
    environment.lb.close()


def create_kb(env: Env, user: str, name: str, scope: str, team: str | None = None) -> int:
    body = {"name": name, "scope": scope} | ({"team": team} if team else {})
    response = env.client.post("/v1/knowledge-bases", json=body, headers=env.as_(user))
    assert response.status_code == 201, response.text
    kb_id: int = response.json()["id"]
    return kb_id


def upload(env: Env, user: str, kb_id: int, name: str, data: bytes) -> Response:
    files = {"files": (name, io.BytesIO(data), "application/octet-stream")}
    return env.client.post(
        f"/v1/knowledge-bases/{kb_id}/documents", files=files, headers=env.as_(user)
    )


def test_requests_without_a_valid_key_get_401_problems(env: Env) -> None:
    for headers in ({}, {"Authorization": "Bearer lb_wrong"}, {"X-API-Key": "nope"}):
        response = env.client.get("/v1/knowledge-bases", headers=headers)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["type"] == "/problems/unauthorized"
    assert env.client.get("/v1/knowledge-bases", headers={"X-API-Key": env.keys["bob"]}).is_success


def test_scopes_decide_who_sees_and_changes_what(env: Env) -> None:
    kbs = {
        "global": create_kb(env, "admin", "handbook", "global"),
        "team": create_kb(env, "alice", "eng-notes", "team", team="eng"),
        "alice": create_kb(env, "alice", "alice-private", "personal"),
        "bob": create_kb(env, "bob", "bob-private", "personal"),
    }
    sees = {
        "admin": {"global"},
        "alice": {"global", "team", "alice"},
        "bob": {"global", "team", "bob"},
        "carol": {"global"},
    }
    changes = {"admin": {"global"}, "alice": {"team", "alice"}, "bob": {"bob"}, "carol": set()}
    for user in sees:
        listed = {
            kb["id"] for kb in env.client.get("/v1/knowledge-bases", headers=env.as_(user)).json()
        }
        assert listed == {kbs[k] for k in sees[user]}, user
        for key, kb_id in kbs.items():
            get = env.client.get(f"/v1/knowledge-bases/{kb_id}", headers=env.as_(user))
            assert get.status_code == (200 if key in sees[user] else 404), (user, key)
            patch = env.client.patch(
                f"/v1/knowledge-bases/{kb_id}", json={"description": "x"}, headers=env.as_(user)
            )
            expected = 200 if key in changes[user] else (403 if key in sees[user] else 404)
            assert patch.status_code == expected, (user, key, patch.text)


def test_only_the_right_roles_create_global_and_team_bases(env: Env) -> None:
    body = {"name": "x", "scope": "global"}
    assert (
        env.client.post("/v1/knowledge-bases", json=body, headers=env.as_("alice")).status_code
        == 403
    )
    body = {"name": "y", "scope": "team", "team": "eng"}
    assert (
        env.client.post("/v1/knowledge-bases", json=body, headers=env.as_("bob")).status_code == 403
    )
    assert (
        env.client.post("/v1/knowledge-bases", json=body, headers=env.as_("alice")).status_code
        == 201
    )


def test_base_names_are_unique_per_owner_team_and_scope_and_leak_nothing(env: Env) -> None:
    kbs = {
        "alice": create_kb(env, "alice", "notes", "personal"),
        "bob": create_kb(env, "bob", "notes", "personal"),  # another owner: no clash
        "team": create_kb(env, "alice", "notes", "team", team="eng"),
        "global": create_kb(env, "admin", "notes", "global"),
    }
    body = {"name": "notes", "scope": "personal"}
    again = env.client.post("/v1/knowledge-bases", json=body, headers=env.as_("alice"))
    assert again.status_code == 409
    # The clash names alice's own base and no other.
    detail = again.json()["detail"]
    assert f"(id {kbs['alice']})" in detail and "personal knowledge base of yours" in detail
    assert not any(str(kbs[other]) in detail for other in ("bob", "team", "global"))
    assert "bob" not in detail
    clash = env.client.post(
        "/v1/knowledge-bases",
        json=body | {"scope": "team", "team": "eng"},
        headers=env.as_("alice"),
    )
    assert clash.status_code == 409 and f"(id {kbs['team']})" in clash.json()["detail"]
    secrets = {
        owner: f"# {owner}\n\nThe {owner} codeword is ZEBRA{owner.upper()}.\n" for owner in kbs
    }
    for owner, kb_id in kbs.items():
        uploader = {"bob": "bob", "global": "admin"}.get(owner, "alice")
        response = upload(env, uploader, kb_id, f"{owner}.md", secrets[owner].encode())
        assert response.status_code == 202, response.text
    assert env.lb.queue.join(30)
    sees = {
        "alice": {"alice", "team", "global"},
        "bob": {"bob", "team", "global"},
        "carol": {"global"},
    }
    for user, visible in sees.items():
        listed = env.client.get("/v1/knowledge-bases", headers=env.as_(user)).json()
        assert {kb["id"] for kb in listed} == {kbs[k] for k in visible}, user
        assert {kb["name"] for kb in listed} == {"notes"}
        found = env.client.post(
            "/v1/search", json={"query": "codeword", "top_k": 10}, headers=env.as_(user)
        ).json()
        assert {hit["path"] for hit in found["hits"]} == {f"{k}.md" for k in visible}, user
        # The agent tools read "notes" as the nearest of the caller's: their own, then the
        # team's, then the global one.
        nearest = next(k for k in (user, "team", "global") if k in visible)
        tool = env.client.post(
            "/v1/tools/search_knowledge_base",
            json={"query": "codeword", "knowledge_base": "notes"},
            headers=env.as_(user),
        ).json()
        cited = {hit["document_id"] for hit in tool["structured"]["hits"]}
        documents = env.client.get(
            f"/v1/knowledge-bases/{kbs[nearest]}/documents", headers=env.as_(user)
        ).json()
        assert cited == {d["id"] for d in documents}, user
    # Bob's base stays his: alice asking for it by id finds nothing.
    for user, other in (("alice", "bob"), ("bob", "alice"), ("carol", "team")):
        got = env.client.get(f"/v1/knowledge-bases/{kbs[other]}", headers=env.as_(user))
        assert got.status_code == 404 and "notes" not in got.text


def test_upload_index_search_and_isolation(env: Env) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    response = upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
    assert response.status_code == 202, response.text
    document = response.json()["documents"][0]
    assert document["name"] == SECRET_NAME and response.json()["created"] == [True]
    assert env.lb.queue.join(30)
    got = env.client.get(f"/v1/documents/{document['id']}", headers=env.as_("alice")).json()
    assert got["state"] == "indexed" and got["chunks"] == 1
    search = env.client.post(
        "/v1/search", json={"query": "BLUEHERON codename"}, headers=env.as_("alice")
    ).json()
    hit = search["hits"][0]
    assert hit["path"] == SECRET_NAME and hit["citation"].startswith(SECRET_NAME)
    assert hit["scores"]["fused"]["rank"] == 1
    env.lb.searcher.reranker = FakeReranker()
    reranked = env.client.post(
        "/v1/search", json={"query": "BLUEHERON codename", "rerank": True}, headers=env.as_("alice")
    ).json()
    # One hit: nothing to reorder, so the reranker is not asked, and the response says so.
    assert reranked["rerank"] == "rerank_skipped" and not reranked["warnings"]
    assert reranked["notes"][0].startswith("rerank_skipped: ") and reranked["hits"]
    assert "rerank" not in reranked["timings_ms"] and reranked["no_answer"] is False
    # Bob sees none of it: every route answers as if it did not exist.
    bob = env.as_("bob")
    assert (
        env.client.post("/v1/search", json={"query": "BLUEHERON"}, headers=bob).status_code == 404
    )
    create_kb(env, "bob", "bob-private", "personal")
    assert (
        env.client.post("/v1/search", json={"query": "BLUEHERON"}, headers=bob).json()["hits"] == []
    )
    for path in (
        f"/v1/documents/{document['id']}",
        f"/v1/documents/{document['id']}/text",
        f"/v1/documents/{document['id']}/chunks?around={hit['chunk_id']}",
    ):
        assert env.client.get(path, headers=bob).status_code == 404
    assert (
        env.client.post(
            "/v1/search", json={"query": "x", "knowledge_bases": [kb_id]}, headers=bob
        ).status_code
        == 404
    )
    text = env.client.get(f"/v1/documents/{document['id']}/text", headers=env.as_("alice"))
    assert "BLUEHERON" in text.json()["text"]


def test_the_stored_original_is_encrypted_name_and_all(
    env: Env, tmp_path: Path, backend: StoreBackend
) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
    assert env.lb.queue.join(30)
    blobs = list(backend.blobs(tmp_path / "data").values())
    assert len(blobs) == 1
    raw = blobs[0]
    assert b"BLUEHERON" not in raw and SECRET_NAME.encode() not in raw
    db = backend.dump(tmp_path / "data")
    assert SECRET_NAME.encode() not in db


def test_identical_bytes_are_one_document(env: Env) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    first = upload(env, "alice", kb_id, "a.md", SECRET_TEXT.encode()).json()
    again = upload(env, "alice", kb_id, "b.md", SECRET_TEXT.encode()).json()
    assert again["created"] == [False]
    assert again["documents"][0]["id"] == first["documents"][0]["id"]
    results: list[int] = []

    def concurrent() -> None:
        results.append(upload(env, "alice", kb_id, "c.md", b"# Same\n\nconcurrent\n").status_code)

    threads = [threading.Thread(target=concurrent) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [202] * 4
    assert env.lb.queue.join(30)
    listed = env.client.get(f"/v1/knowledge-bases/{kb_id}/documents", headers=env.as_("alice"))
    assert len(listed.json()) == 2


def test_delete_purges_every_row_and_the_blob(
    env: Env, tmp_path: Path, backend: StoreBackend
) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    document = upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode()).json()["documents"][0]
    assert env.lb.queue.join(30)
    assert (
        env.client.delete(f"/v1/documents/{document['id']}", headers=env.as_("alice")).status_code
        == 204
    )
    tables = ("documents", "chunks", "vectors", "sections", "document_texts")
    for table in (*tables, "jobs") if backend.postgres else tables:
        assert backend.rows(tmp_path / "data", f"SELECT count(*) FROM {table}") == [(0,)], table
    assert backend.blobs(tmp_path / "data") == {}
    assert (
        env.client.get(f"/v1/documents/{document['id']}", headers=env.as_("alice")).status_code
        == 404
    )


def test_a_full_queue_answers_503_and_loses_nothing(tmp_path: Path, backend: StoreBackend) -> None:
    env = build(tmp_path, backend, start=False, queue_size=1)  # no workers yet: the queue fills
    try:
        kb_id = create_kb(env, "alice", "alice-private", "personal")
        assert upload(env, "alice", kb_id, "one.md", b"# One\n\nfirst file\n").status_code == 202
        busy = upload(env, "alice", kb_id, "two.md", b"# Two\n\nsecond file\n")
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "5"
        assert busy.json()["type"] == "/problems/overloaded"
        env.lb.start_serving()  # workers drain the queue, the sweep re-admits the second file
        assert env.lb.queue.join(30)
        env.lb.queue.sweep_now()
        assert env.lb.queue.join(30)
        listed = env.client.get(f"/v1/knowledge-bases/{kb_id}/documents", headers=env.as_("alice"))
        assert sorted(d["state"] for d in listed.json()) == ["indexed", "indexed"]
    finally:
        env.lb.stop_serving()
        env.lb.close()


def test_bad_requests_name_the_field(env: Env) -> None:
    response = env.client.post(
        "/v1/search", json={"query": "", "top_k": 500}, headers=env.as_("alice")
    )
    assert response.status_code == 422
    fields = {e["field"] for e in response.json()["errors"]}
    assert {"query", "top_k"} <= fields
    assert (
        env.client.post(
            "/v1/search", json={"query": "x", "extra": 1}, headers=env.as_("alice")
        ).status_code
        == 422
    )
    assert env.client.get("/v1/documents/0123abcd", headers=env.as_("alice")).status_code == 404
    assert env.client.get("/v1/documents/nope", headers=env.as_("alice")).status_code == 422


def test_health_readiness_metrics(env: Env) -> None:
    assert env.client.get("/healthz").json() == {"status": "ok"}
    assert env.client.get("/readyz").status_code == 200
    kb_id = create_kb(env, "alice", "k", "personal")
    upload(env, "alice", kb_id, "m.md", b"# M\n\nmetrics\n")
    assert env.lb.queue.join(30)
    env.client.post("/v1/search", json={"query": "metrics"}, headers=env.as_("alice"))
    assert env.client.get("/metrics").status_code == 401
    assert env.client.get("/metrics", headers=env.as_("alice")).status_code == 403
    text = env.client.get("/metrics", headers=env.as_("admin")).text
    assert 'lorebase_documents{state="indexed"} 1.0' in text
    assert 'lorebase_admissions{outcome="accepted"} 1.0' in text
    assert 'lorebase_search_seconds_count{mode="hybrid"} 1.0' in text
    assert "lorebase_embed_batch_seconds_count 0.0" not in text  # the embedder was timed


def test_access_logs_carry_no_content(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
    assert env.lb.queue.join(30)
    env.client.post("/v1/search", json={"query": "BLUEHERON codename"}, headers=env.as_("alice"))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "/v1/search" in logged
    for needle in ("BLUEHERON", SECRET_NAME, "codename", env.keys["alice"]):
        assert needle not in logged


def test_binding_beyond_loopback_needs_keys() -> None:
    with pytest.raises(InvalidInput):
        ServeSettings(host="0.0.0.0", auth=False)
    assert ServeSettings(host="0.0.0.0", auth=True).auth


def test_rotating_the_data_key_keeps_every_upload_readable(tmp_path: Path) -> None:
    # SQLite only: the key lives in data.key; a shared store's key comes from
    # LOREBASE_DATA_KEY (its rotation: tests/unit/test_postgres_blobs.py).
    env = build(tmp_path, StoreBackend("sqlite"))
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    document = upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode()).json()["documents"][0]
    assert env.lb.queue.join(30)
    env.lb.stop_serving()
    data = tmp_path / "data"
    old_key = env.lb.data_key
    # The service above used a generated key; put it where rotation finds it.
    old_key.save(data / "data.key")
    rotation = env.lb.rotate_data_key()
    assert (rotation.blobs, rotation.names) == (1, 1)
    new_key = DataKey.load(data)
    assert new_key == rotation.new_key == env.lb.data_key and new_key != old_key
    env.lb.close()
    serve = ServeSettings(workers=1, watch=False)
    with open_lorebase(
        settings=Settings(data_dir=data, serve=serve), embedder=FakeEmbedder()
    ) as lb:
        client = api_client(create_app(lb))
        with client:
            got = client.get(f"/v1/documents/{document['id']}", headers=env.as_("alice")).json()
        assert got["name"] == SECRET_NAME
        assert lb.blobs.get(document["id"]) == SECRET_TEXT.encode()


def test_events_carry_states_not_content() -> None:
    import asyncio

    from lorebase.events import EventBus

    async def scenario() -> list[str]:
        bus = EventBus()
        stream = bus.stream({1})
        assert isinstance(stream, AsyncGenerator)  # closed below, as a server closes it
        first = await stream.__anext__()
        bus.publish("document", 1, document_id="abc", state="indexed")
        bus.publish("document", 2, document_id="hidden", state="indexed")
        second = await asyncio.wait_for(stream.__anext__(), 2)
        await stream.aclose()
        return [first, second]

    connected, event = asyncio.run(scenario())
    assert connected.startswith(": connected")
    assert '"document_id": "abc"' in event and "hidden" not in event


def test_agent_tools_over_http_are_scoped_and_fenced(env: Env) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
    assert env.lb.queue.join(30)
    listed = env.client.get("/v1/tools", headers=env.as_("alice")).json()
    names = {tool["function"]["name"] for tool in listed["tools"]}
    assert names == {
        "list_knowledge_bases",
        "search_knowledge_base",
        "read_document",
        "read_surrounding_chunks",
    }
    assert "alice-private" in listed["system_prompt_hint"]
    called = env.client.post(
        "/v1/tools/search_knowledge_base", json={"query": "BLUEHERON"}, headers=env.as_("alice")
    ).json()
    assert called["structured"]["content_trust"] == "untrusted-document"
    assert "<untrusted-document" in called["text"] and "BLUEHERON" in called["text"]
    # An upload is cited by its own name, never by the path of its encrypted copy.
    assert SECRET_NAME in called["text"] and "uploads/" not in called["text"]
    document_id = called["structured"]["hits"][0]["document_id"]
    body = {"document_id": document_id, "knowledge_base": "alice-private"}
    read = env.client.post("/v1/tools/read_document", json=body, headers=env.as_("alice"))
    assert SECRET_NAME in read.json()["text"] and "uploads/" not in read.json()["text"]
    bob = env.client.post(
        "/v1/tools/search_knowledge_base",
        json={"query": "BLUEHERON", "knowledge_base": "alice-private"},
        headers=env.as_("bob"),
    )
    assert bob.status_code == 404
    bad = env.client.post(
        "/v1/tools/search_knowledge_base", json={"top_k": 99}, headers=env.as_("alice")
    )
    assert bad.status_code == 422 and "query" in bad.json()["detail"]
    assert env.client.post("/v1/tools/nope", json={}, headers=env.as_("alice")).status_code in (
        404,
        422,
    )


ROUTES = [
    # (method, path template, needs write, body)
    ("GET", "/v1/knowledge-bases/{kb}", False, None),
    ("GET", "/v1/knowledge-bases/{kb}/documents", False, None),
    ("GET", "/v1/knowledge-bases/{kb}/sources", False, None),
    ("POST", "/v1/search", False, {"query": "matrix", "knowledge_bases": ["{kb}"]}),
    ("GET", "/v1/documents/{doc}", False, None),
    ("GET", "/v1/documents/{doc}/text", False, None),
    ("PATCH", "/v1/knowledge-bases/{kb}", True, {"description": "changed"}),
    ("POST", "/v1/knowledge-bases/{kb}/reindex", True, None),
    ("POST", "/v1/documents/{doc}/reindex", True, None),
    ("POST", "/v1/knowledge-bases/{kb}/sync", True, None),
]


def test_every_role_scope_and_route(env: Env) -> None:
    """Each user x each scope x each route: 2xx when allowed, 403 when only seeing is
    allowed, 404 when not even that."""
    kbs = {
        "global": create_kb(env, "admin", "handbook", "global"),
        "team": create_kb(env, "alice", "eng-notes", "team", team="eng"),
        "alice": create_kb(env, "alice", "alice-private", "personal"),
    }
    owners = {"global": "admin", "team": "alice", "alice": "alice"}
    docs = {}
    for scope, kb_id in kbs.items():
        uploaded = upload(
            env, owners[scope], kb_id, f"{scope}.md", f"# {scope}\n\nmatrix\n".encode()
        )
        docs[scope] = uploaded.json()["documents"][0]["id"]
    assert env.lb.queue.join(30)
    sees = {
        "admin": {"global"},
        "alice": {"global", "team", "alice"},
        "bob": {"global", "team"},
        "carol": {"global"},
    }
    changes = {"admin": {"global"}, "alice": {"team", "alice"}, "bob": set(), "carol": set()}
    for user in sees:
        for scope, kb_id in kbs.items():
            for method, template, write, body in ROUTES:
                path = template.format(kb=kb_id, doc=docs[scope])
                payload = json_with(body, kb_id)
                response = env.client.request(method, path, json=payload, headers=env.as_(user))
                if scope not in sees[user]:
                    expected = {404}
                elif write and scope not in changes[user]:
                    expected = {403}
                else:
                    expected = {200, 202}
                assert response.status_code in expected, (
                    user,
                    scope,
                    method,
                    path,
                    response.status_code,
                )
    actions = {entry.action for entry in env.lb.accounts.audit_log()}
    assert {"create_knowledge_base", "update_knowledge_base"} <= actions
    assert all("matrix" not in entry.target for entry in env.lb.accounts.audit_log())


def json_with(body: dict[str, Any] | None, kb_id: int) -> dict[str, Any] | None:
    if body is None:
        return None
    return {k: ([kb_id] if v == ["{kb}"] else v) for k, v in body.items()}


# -- one service: regressions of the split top layer ---------------------------------------------
def test_deleting_a_base_through_the_library_removes_its_upload_blobs(
    env: Env, tmp_path: Path, backend: StoreBackend
) -> None:
    """`lb.delete_kb` (the library and `lorebase kb delete`) used to leave the encrypted
    originals on disk; only the HTTP route removed them."""
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    upload(env, "alice", kb_id, SECRET_NAME, SECRET_TEXT.encode())
    upload(env, "alice", kb_id, "other.md", b"# Other\n\nAnother upload.\n")
    assert env.lb.queue.join(30)
    assert len(backend.blobs(tmp_path / "data")) == 2
    env.lb.delete_kb("alice-private")
    assert backend.blobs(tmp_path / "data") == {}
    assert env.lb.store.list_uploads() == []


def test_reindexing_a_folder_base_queues_one_pass_and_starts_no_thread(
    env: Env, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`POST …/reindex` on a folder base of 40 documents used to start 40 daemon threads, each
    running a whole pass, their failures reaching only stderr. Now the ingestion queue owns the
    work: one pass, counted in the queue's stats, a failure logged without content."""
    folder = tmp_path / "handbook"
    folder.mkdir()
    for n in range(40):
        (folder / f"page-{n:02d}.md").write_text(f"# Page {n}\n\nPolicy number {n} says hello.\n")
    kb = env.lb.create_kb("handbook", scope="global", sources=[folder])
    env.lb.sync("handbook")
    assert env.lb.kb("handbook").indexed == 40
    accepted = env.lb.queue.stats.accepted
    threads = threading.active_count()
    response = env.client.post(f"/v1/knowledge-bases/{kb.id}/reindex", headers=env.as_("admin"))
    assert response.status_code == 202 and response.json() == {"queued": 40}
    # No thread per document (it was 40): at most the test client's own portal may come and go.
    assert threading.active_count() <= threads + 2
    assert env.lb.queue.stats.accepted == accepted + 1  # one pass for the 40 documents
    assert env.lb.queue.join(30)
    after = env.lb.kb("handbook")
    assert (after.indexed, after.pending) == (40, 0)
    # A pass that fails is counted and logged (the class only), not lost on stderr.
    done, failed = env.lb.queue.stats.done, env.lb.queue.stats.failed

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise sqlite3.OperationalError("disk I/O error while writing Policy number 7")

    env.lb.sync = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="lorebase"):
        response = env.client.post(f"/v1/knowledge-bases/{kb.id}/sync", headers=env.as_("admin"))
        assert response.status_code == 202
        assert env.lb.queue.join(30)
    assert (env.lb.queue.stats.done, env.lb.queue.stats.failed) == (done, failed + 1)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "OperationalError" in logged and "Policy" not in logged


def test_a_route_asking_for_passes_again_and_again_queues_one(env: Env, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n")
    kb = env.lb.create_kb("notes", scope="global", sources=[folder])
    env.lb.stop_serving()  # nothing takes jobs: what waits in the queue is what was asked for
    for _ in range(5):
        response = env.client.post(f"/v1/knowledge-bases/{kb.id}/sync", headers=env.as_("admin"))
        assert response.status_code == 202
    assert env.lb.queue.depth == 1


def test_an_unexpected_error_answers_500_with_the_request_id_the_log_has(
    env: Env, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_kb(env, "alice", "alice-private", "personal")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the query was about BLUEHERON")

    monkeypatch.setattr(env.lb, "search", broken)
    with caplog.at_level(logging.ERROR, logger="lorebase"):
        response = env.client.post(
            "/v1/search", json={"query": "BLUEHERON"}, headers=env.as_("alice")
        )
    assert response.status_code == 500
    body = response.json()
    assert body["request_id"] == response.headers["X-Request-Id"]
    assert "BLUEHERON" not in response.text
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"RuntimeError in request id={body['request_id']}" in logged
    assert "BLUEHERON" not in logged


def test_serve_configures_its_log_once() -> None:
    from lorebase.logs import LOG_HANDLER, configure_logging

    configure_logging()
    configure_logging()
    handlers = [h for h in logging.getLogger("lorebase").handlers if h.name == LOG_HANDLER]
    assert len(handlers) == 1
    logging.getLogger("lorebase").removeHandler(handlers[0])


def test_a_base_filled_only_by_uploads_becomes_ready(env: Env) -> None:
    kb_id = create_kb(env, "alice", "uploads-only", "personal")
    before = env.client.get(f"/v1/knowledge-bases/{kb_id}", headers=env.as_("alice")).json()
    assert before["state"] == "pending" and before["last_pass_finished_at"] is None
    upload(env, "alice", kb_id, "a.md", b"# A\n\nFirst.\n")
    upload(env, "alice", kb_id, "b.md", b"# B\n\nSecond.\n")
    assert env.lb.queue.join(30)
    after = env.client.get(f"/v1/knowledge-bases/{kb_id}", headers=env.as_("alice")).json()
    assert after["state"] == "ready" and after["last_pass_finished_at"] is not None
    assert (after["indexed"], after["pending"]) == (2, 0)


def test_team_names_and_counts_do_not_leak_across_scopes(env: Env) -> None:
    """A team the caller is not in answers like a missing one."""
    for team in ("eng", "no-such-team"):
        body = {"name": f"x-{team}", "scope": "team", "team": team}
        response = env.client.post("/v1/knowledge-bases", json=body, headers=env.as_("carol"))
        assert response.status_code == 404, response.text
    assert "eng" not in response.json()["detail"]


@pytest.mark.parametrize("path", ["/tmp/a\x00b", "~nosuchuser-lorebase/x", "relative/../nowhere"])
def test_a_source_path_that_is_not_a_folder_is_422(env: Env, path: str) -> None:
    kb_id = create_kb(env, "admin", "shared", "global")
    response = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/sources", json={"path": path}, headers=env.as_("admin")
    )
    assert response.status_code == 422, response.text
    assert "\x00" not in response.text


def test_the_api_docs_render_offline(env: Env) -> None:
    """Swagger UI and ReDoc come from this server, not a CDN."""
    for page in ("/docs", "/redoc"):
        html = env.client.get(page).text
        sources = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)
        assert sources, page
        assert all(s.startswith("/") and not s.startswith("//") for s in sources), sources
        for source in sources:
            assert env.client.get(source).status_code == 200, source


def test_a_callers_tie_between_visible_bases_names_only_those(env: Env) -> None:
    lb = env.lb
    ops = lb.accounts.create_team("ops")
    alice_user = next(u for u in lb.accounts.list_users() if u.name == "alice")
    lb.accounts.set_member(ops.id, alice_user.id, Role.ADMIN)
    eng_notes = create_kb(env, "alice", "notes", "team", team="eng")
    ops_notes = create_kb(env, "alice", "notes", "team", team="ops")
    bobs = create_kb(env, "bob", "notes", "personal")
    alice = lb.authenticate(env.keys["alice"])
    with pytest.raises(InvalidInput, match="give the id") as tie:
        lb.kb("notes", alice)
    message = str(tie.value)
    assert f"{eng_notes} (team " in message and f"{ops_notes} (team " in message
    assert str(bobs) not in message and "bob" not in message
    # Bob sees one of them (eng) besides his own: his own is nearer.
    assert lb.kb("notes", lb.authenticate(env.keys["bob"])).id == bobs
    # An id works where the name is ambiguous, and only for a base the caller may see.
    assert lb.kb(str(ops_notes), alice).id == ops_notes
    with pytest.raises(NotFound):
        lb.kb(str(bobs), alice)
    # The agent tools refuse the same way, as a bad argument.
    tool = env.client.post(
        "/v1/tools/search_knowledge_base",
        json={"query": "x", "knowledge_base": "notes"},
        headers=env.as_("alice"),
    )
    assert tool.status_code == 422 and str(bobs) not in tool.text


def test_a_documents_chunks_read_from_the_start_without_a_passage(env: Env) -> None:
    kb_id = create_kb(env, "alice", "alice-private", "personal")
    text = "# Guide\n\n" + "\n\n".join(f"## Part {n}\n\n" + "words " * 300 for n in range(4))
    document = upload(env, "alice", kb_id, "guide.md", text.encode()).json()["documents"][0]
    assert env.lb.queue.join(30)
    url = f"/v1/documents/{document['id']}/chunks"
    first = env.client.get(url, params={"limit": 2}, headers=env.as_("alice")).json()
    assert [c["ordinal"] for c in first] == [0, 1]
    rest = env.client.get(url, params={"start": 2, "limit": 100}, headers=env.as_("alice"))
    assert [c["ordinal"] for c in rest.json()][:1] == [2]
    assert env.client.get(url, headers=env.as_("bob")).status_code == 404


def test_a_request_looks_its_key_up_once(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard that checks the key before the body is read hands its caller to the route."""
    accounts = env.lb.accounts
    calls = []
    resolve = accounts.resolve_credential

    def counted(key: str, *, session: bool) -> tuple[User, int] | None:
        calls.append(key)
        return resolve(key, session=session)

    monkeypatch.setattr(accounts, "resolve_credential", counted)
    assert env.client.get("/v1/knowledge-bases", headers=env.as_("alice")).status_code == 200
    assert len(calls) == 1
