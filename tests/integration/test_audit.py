"""The audit log over the real app on both stores: every kind of change is recorded with who,
when, what (ids, never content) and from where; administrators read it (since a date); it
keeps its configured size; the command line reads it too and records its own changes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from integration.store_backends import StoreBackend
from integration.test_api import Env, build, create_kb, upload
from lorebase.cli.main import app

SECRET = "The vault code is BLUEHERON."


@pytest.fixture
def env(tmp_path: Path, backend: StoreBackend) -> Iterator[Env]:
    environment = build(tmp_path, backend)
    environment.lb.accounts.create_team("ops")
    yield environment
    environment.lb.close()


def audited(env: Env, **query: Any) -> Any:
    response = env.client.get("/v1/audit", params=query, headers=env.as_("admin"))
    assert response.status_code == 200, response.text
    return response.json()


def test_every_kind_of_change_is_audited_with_who_and_from_where(env: Env, tmp_path: Path) -> None:
    kb_id = create_kb(env, "alice", "eng-notes", "team", team="eng")
    sent = upload(env, "alice", kb_id, "plan.md", f"# Plan\n\n{SECRET}\n".encode())
    document = sent.json()["documents"][0]["id"]
    assert env.lb.queue.join(30)
    as_alice = env.as_("alice")
    client = env.client
    note = client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json={"text": SECRET}, headers=as_alice
    )
    client.patch(f"/v1/notes/{note.json()['id']}", json={"text": SECRET + "!"}, headers=as_alice)
    client.patch(f"/v1/documents/{document}", json={"add_tags": ["plans"]}, headers=as_alice)
    client.post(f"/v1/documents/{document}/reindex", headers=as_alice)
    client.patch(f"/v1/knowledge-bases/{kb_id}", json={"description": "d"}, headers=as_alice)
    grant = client.post(
        f"/v1/knowledge-bases/{kb_id}/grants", json={"team": "ops"}, headers=as_alice
    ).json()
    client.delete(f"/v1/knowledge-bases/{kb_id}/grants/{grant['id']}", headers=as_alice)
    # Source changes: the admin's, on a global base (folders on the server are theirs to add).
    folder = tmp_path / "folder"
    folder.mkdir()
    handbook = create_kb(env, "admin", "handbook", "global")
    as_admin = env.as_("admin")
    source = client.post(
        f"/v1/knowledge-bases/{handbook}/sources", json={"path": str(folder)}, headers=as_admin
    )
    assert source.status_code == 201, source.text
    client.delete(f"/v1/knowledge-bases/{handbook}/sources/{source.json()['id']}", headers=as_admin)
    key = client.post("/v1/keys", json={"name": "ci"}, headers=as_alice).json()["record"]
    client.delete(f"/v1/keys/{key['id']}", headers=as_alice)
    client.delete(f"/v1/documents/{document}", headers=as_alice)
    client.delete(f"/v1/knowledge-bases/{kb_id}", headers=as_alice)
    assert env.lb.queue.join(30)
    entries = audited(env, limit=1000)
    mine = {e["action"]: e for e in entries if e["actor"] == "alice"}
    expected = {
        "create_knowledge_base": f"kb:{kb_id}",
        "upload_document": f"document:{document}",
        "add_note": f"document:{note.json()['id']}",
        "edit_note": f"document:{note.json()['id']}",
        "tag_document": f"document:{document}",
        "reindex": f"document:{document}",
        "update_knowledge_base": f"kb:{kb_id}",
        "share_knowledge_base": f"kb:{kb_id} team:",
        "unshare_knowledge_base": f"kb:{kb_id} team:",
        "create_key": "key:",
        "revoke_key": f"key:{key['id']}",
        "delete_document": f"document:{document}",
        "delete_knowledge_base": f"kb:{kb_id}",
    }
    for action, target in expected.items():
        assert action in mine, action
        assert mine[action]["target"].startswith(target), (action, mine[action])
        assert mine[action]["client"] == "testclient"  # the request's address
    admins = {e["action"]: e for e in entries if e["actor"] == "admin"}
    for action in ("add_source", "remove_source"):
        assert admins[action]["target"] == f"kb:{handbook}"
        assert admins[action]["client"] == "testclient"
    assert [e["id"] for e in entries] == sorted((e["id"] for e in entries), reverse=True)
    assert all("BLUEHERON" not in json.dumps(e) for e in entries)


def test_only_administrators_read_it_since_a_date(env: Env) -> None:
    create_kb(env, "alice", "mine", "personal")
    assert env.client.get("/v1/audit", headers=env.as_("alice")).status_code == 403
    assert [e["action"] for e in audited(env, since="2000-01-01")] == ["create_knowledge_base"]
    assert audited(env, since=time.strftime("%Y", time.gmtime(time.time() + 366 * 86400))) == []
    for bad in ("yesterday", "2026-13-01", "01/12/2026"):
        refused = env.client.get("/v1/audit", params={"since": bad}, headers=env.as_("admin"))
        assert refused.status_code == 422, bad
        assert "YYYY-MM-DD" in refused.json()["detail"] and bad not in refused.json()["detail"]


def test_the_log_keeps_its_configured_size(tmp_path: Path, backend: StoreBackend) -> None:
    import dataclasses

    from lorebase.app import open_lorebase

    settings = dataclasses.replace(backend.settings(tmp_path / "data"), audit_rows=3)
    with open_lorebase(settings=settings, embedder=None, data_key=backend.data_key()) as lb:
        for number in range(6):
            lb.create_kb(f"base-{number}")
        kept = lb.audit_log(limit=100)
        assert [e.target for e in kept] == [f"kb:{kb.id}" for kb in lb.knowledge_bases()[::-1][:3]]
        assert {(e.actor, e.client) for e in kept} == {("cli", "cli")}


def test_the_command_line_reads_the_log_and_records_its_own_changes(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--data-dir", str(tmp_path / "data"), "--embedder", "fake"]
    assert runner.invoke(app, [*base, "kb", "create", "work"]).exit_code == 0
    assert runner.invoke(app, [*base, "notes", "add", "work", SECRET]).exit_code == 0
    shown = runner.invoke(app, [*base, "audit", "--json"])
    assert shown.exit_code == 0, shown.output
    entries = json.loads(shown.stdout)
    assert [(e["actor"], e["action"], e["client"]) for e in entries] == [
        ("cli", "add_note", "cli"),
        ("cli", "create_knowledge_base", "cli"),
    ]
    assert "BLUEHERON" not in shown.stdout
    table = runner.invoke(app, [*base, "audit", "--since", "2000"])
    assert table.exit_code == 0 and "add_note" in table.stdout
    bad = runner.invoke(app, [*base, "audit", "--since", "last week"])
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output
