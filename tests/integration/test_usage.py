"""Usage accounting over the real app on both stores: every embedding call (a pass, a query,
a note) and chat call (ask) counted per base, user, model and role; in aggregate (one row per
bucket, however many searches), written by flushes rather than by searches; administrators
read everyone's, users their own; metrics; the command line; bad dates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chat_stand_in import StandIn, Turn
from integration.store_backends import StoreBackend
from integration.test_agent_ask import QUESTION, _handbook_server
from integration.test_api import Env, build, create_kb, upload
from loopback import client as api_client
from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder


@pytest.fixture
def env(tmp_path: Path, backend: StoreBackend) -> Iterator[Env]:
    environment = build(tmp_path, backend)
    yield environment
    environment.lb.close()


def usage(env: Env, user: str, **query: str) -> Any:
    response = env.client.get("/v1/usage", params=query, headers=env.as_(user))
    assert response.status_code == 200, response.text
    return response.json()


def search(env: Env, user: str, query: str, kb_id: int) -> None:
    body = {"query": query, "knowledge_bases": [kb_id]}
    assert env.client.post("/v1/search", json=body, headers=env.as_(user)).status_code == 200


def stored_rows(backend: StoreBackend, tmp_path: Path) -> int:
    rows = backend.rows(tmp_path / "data", "SELECT count(*) FROM usage_hours")
    return int(rows[0][0])


def test_calls_are_counted_per_base_user_and_role_in_aggregate(
    env: Env, backend: StoreBackend, tmp_path: Path
) -> None:
    kb_id = create_kb(env, "alice", "eng-notes", "team", team="eng")
    upload(env, "alice", kb_id, "plan.md", b"# Plan\n\nHerons nest in spring.\n")
    assert env.lb.queue.join(30)  # a pass: counted without a user, written at its end
    assert stored_rows(backend, tmp_path) == 1
    for query in ("herons", "spring nests", "herons", "kestrels"):  # "herons" twice: asked once
        search(env, "alice", query, kb_id)
    search(env, "bob", "heron chicks", kb_id)
    # Searches write nothing: their calls wait in memory for the next flush.
    assert stored_rows(backend, tmp_path) == 1
    # A note is indexed by a pass of its own, which writes what was counted as it ends.
    env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes",
        json={"text": "Herons left."},
        headers=env.as_("alice"),
    )
    assert stored_rows(backend, tmp_path) == 3
    rows = {(r["knowledge_base"], r["user"], r["role"]): r for r in usage(env, "admin")}
    assert set(rows) == {
        ("eng-notes", None, "embedding"),
        ("eng-notes", "alice", "embedding"),
        ("eng-notes", "bob", "embedding"),
    }
    assert rows[("eng-notes", None, "embedding")]["texts"] == 1  # the uploaded file's chunk
    alice = rows[("eng-notes", "alice", "embedding")]
    assert (alice["calls"], alice["texts"]) == (4, 4)  # three new queries and the note
    assert alice["tokens"] > 0 and alice["model"] == "default"
    assert rows[("eng-notes", "bob", "embedding")]["texts"] == 1
    # One row per bucket, however many calls.
    for _ in range(10):
        search(env, "alice", "herons again and again", kb_id)
    usage(env, "admin")
    assert stored_rows(backend, tmp_path) <= 3
    # A user reads their own.
    assert {r["user"] for r in usage(env, "alice")} == {"alice"}
    assert usage(env, "carol") == []
    metrics = env.client.get("/metrics", headers=env.as_("admin")).text
    assert 'lorebase_model_tokens_total{model="default",role="embedding"}' in metrics


def test_usage_since_a_date_and_bad_dates(env: Env) -> None:
    kb_id = create_kb(env, "alice", "mine", "personal")
    env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json={"text": "A note."}, headers=env.as_("alice")
    )
    assert len(usage(env, "alice", since="2000-01-01")) == 1
    assert usage(env, "alice", since="2999") == []
    for bad in ("yesterday", "2026-02-30", "1/2/2026"):
        refused = env.client.get("/v1/usage", params={"since": bad}, headers=env.as_("alice"))
        assert refused.status_code == 422
        assert "YYYY-MM-DD" in refused.json()["detail"] and bad not in refused.json()["detail"]


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_ask_is_counted_as_chat(stand_in: StandIn, tmp_path: Path) -> None:
    from lorebase.api.app import create_app

    stand_in.script = [
        Turn(calls=[("search_knowledge_base", {"query": "vacation carry over"})]),
        Turn(text="Up to ten days carry over [1]."),
    ]
    folder, settings = _handbook_server(tmp_path, stand_in)
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.add([folder], kb="team")
        client = api_client(create_app(lb, manage=False))
        assert client.post("/v1/ask", json={"question": QUESTION}).status_code == 200
        rows = client.get("/v1/usage").json()
    chat = [r for r in rows if r["role"] == "chat"]
    assert [(r["model"], r["user"], r["calls"]) for r in chat] == [("stand-in", "local", 2)]
    assert chat[0]["tokens"] > 0 and chat[0]["knowledge_base_id"] is None
    searched = [r for r in rows if r["role"] == "embedding" and r["user"] == "local"]
    assert searched and searched[0]["knowledge_base"] == "team"  # the tool's query


def test_the_command_line_shows_usage(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nHerons nest in spring.\n")
    assert runner.invoke(app, [*base, "add", str(folder), "--kb", "work"]).exit_code == 0
    assert runner.invoke(app, [*base, "search", "herons", "--kb", "work"]).exit_code == 0
    shown = runner.invoke(app, [*base, "usage", "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert [(r["knowledge_base"], r["user"], r["role"], r["texts"]) for r in rows] == [
        ("work", None, "embedding", 2)
    ]
    assert rows[0]["tokens"] > 0
    assert "work" in runner.invoke(app, [*base, "usage", "--since", "2000"]).stdout
    bad = runner.invoke(app, [*base, "usage", "--since", "soon"])
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output
