"""Sharing a team's base with another team or a user, over the real app on both stores: the
isolation tests' matrices (each user x each base x each route) again, with grants — the
grantees see and change what their grant gives and nothing more, no one else sees more,
revoking holds at the next request; the refusals (403, 404, 422); listings, search and the
agent tools name the owner team."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.store_backends import StoreBackend
from integration.test_api import Env, build, create_kb, json_with, upload
from lorebase.accounts.base import Role
from lorebase.agent.profiles import Profiles

# (method, path template, what it needs: read, write (documents) or administer, body)
ROUTES: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("GET", "/v1/knowledge-bases/{kb}", "read", None),
    ("GET", "/v1/knowledge-bases/{kb}/documents", "read", None),
    ("GET", "/v1/knowledge-bases/{kb}/notes", "read", None),
    ("POST", "/v1/search", "read", {"query": "matrix", "knowledge_bases": ["{kb}"]}),
    ("GET", "/v1/documents/{doc}", "read", None),
    ("GET", "/v1/documents/{doc}/text", "read", None),
    ("POST", "/v1/knowledge-bases/{kb}/reindex", "write", None),
    ("POST", "/v1/documents/{doc}/reindex", "write", None),
    ("PATCH", "/v1/documents/{doc}", "write", {"add_tags": ["shared"]}),
    ("POST", "/v1/knowledge-bases/{kb}/notes", "write", {"text": "matrix note"}),
    ("PATCH", "/v1/knowledge-bases/{kb}", "administer", {"description": "changed"}),
    ("GET", "/v1/knowledge-bases/{kb}/grants", "administer", None),
]


@pytest.fixture
def env(tmp_path: Path, backend: StoreBackend) -> Iterator[Env]:
    environment = build(tmp_path, backend)
    accounts = environment.lb.accounts
    ops = accounts.create_team("ops")
    for name in ("dave", "erin"):
        user = accounts.create_user(name, Role.MEMBER)
        environment.keys[name], _ = accounts.create_key(user.id)
        if name == "dave":
            accounts.set_member(ops.id, user.id, Role.MEMBER)
    yield environment
    environment.lb.close()


def share(env: Env, who: str, kb_id: int, **body: str) -> Any:
    return env.client.post(f"/v1/knowledge-bases/{kb_id}/grants", json=body, headers=env.as_(who))


def listed(env: Env, user: str) -> dict[int, dict[str, Any]]:
    bases = env.client.get("/v1/knowledge-bases", headers=env.as_(user)).json()
    return {kb["id"]: kb for kb in bases}


def test_a_grant_gives_what_it_says_and_no_more(env: Env) -> None:
    kbs = {
        "global": create_kb(env, "admin", "handbook", "global"),
        "team": create_kb(env, "alice", "eng-notes", "team", team="eng"),
        "other": create_kb(env, "alice", "eng-secrets", "team", team="eng"),
        "alice": create_kb(env, "alice", "alice-private", "personal"),
    }
    owners = {"global": "admin", "team": "alice", "other": "alice", "alice": "alice"}
    docs = {}
    for key, kb_id in kbs.items():
        sent = upload(env, owners[key], kb_id, f"{key}.md", f"# {key}\n\nmatrix\n".encode())
        docs[key] = sent.json()["documents"][0]["id"]
    assert env.lb.queue.join(30)
    assert share(env, "alice", kbs["team"], team="ops").status_code == 201
    assert share(env, "alice", kbs["team"], user="carol", access="write").status_code == 201
    sees = {
        "admin": {"global"},
        "alice": {"global", "team", "other", "alice"},
        "bob": {"global", "team", "other"},
        "carol": {"global", "team"},
        "dave": {"global", "team"},
        "erin": {"global"},
    }
    changes = {"admin": {"global"}, "alice": {"team", "other", "alice"}, "carol": {"team"}}
    administers = {"admin": {"global"}, "alice": {"team", "other", "alice"}}
    for user, visible in sees.items():
        assert set(listed(env, user)) == {kbs[k] for k in visible}, user
        found = env.client.post(
            "/v1/search", json={"query": "matrix", "top_k": 10}, headers=env.as_(user)
        ).json()
        assert {hit["knowledge_base_id"] for hit in found["hits"]} <= {kbs[k] for k in visible}
        for key, kb_id in kbs.items():
            for method, template, needs, body in ROUTES:
                path = template.format(kb=kb_id, doc=docs[key])
                allowed = {"read": sees, "write": changes, "administer": administers}[needs]
                response = env.client.request(
                    method, path, json=json_with(body, kb_id), headers=env.as_(user)
                )
                if key not in visible:
                    expected = {404}
                elif key not in allowed.get(user, set()):
                    expected = {403}
                else:
                    expected = {200, 201, 202}
                assert response.status_code in expected, (user, key, method, path)


def test_grantees_see_the_owner_team_and_a_revocation_holds_at_once(env: Env) -> None:
    kb_id = create_kb(env, "alice", "eng-notes", "team", team="eng")
    upload(env, "alice", kb_id, "runbook.md", b"# Runbook\n\nRestart the heron service.\n")
    assert env.lb.queue.join(30)
    grant = share(env, "alice", kb_id, team="ops").json()
    assert (grant["grantee"], grant["name"], grant["access"]) == ("team", "ops", "read")
    assert grant["granted_by"] == "alice"
    seen = listed(env, "dave")[kb_id]
    assert (seen["team"], seen["shared"], seen["scope"]) == ("eng", "read", "team")
    assert listed(env, "bob")[kb_id]["shared"] is None  # bob sees it by its scope
    found = env.client.post(
        "/v1/search", json={"query": "heron service"}, headers=env.as_("dave")
    ).json()
    hits = found["hits"]
    assert [hit["knowledge_base_id"] for hit in hits] == [kb_id]
    assert found["teams"] == {"eng-notes": "eng"}  # the search names the owner team too
    tool = env.client.post(
        "/v1/tools/list_knowledge_bases", json={}, headers=env.as_("dave")
    ).json()["structured"]["knowledge_bases"]
    assert [(kb["name"], kb["team"], kb["shared"]) for kb in tool] == [("eng-notes", "eng", "read")]
    Profiles(env.lb.settings.data_dir).create("desk", ["eng-notes"])
    profiles = env.client.get("/v1/profiles", headers=env.as_("dave")).json()
    assert [(p["name"], p["knowledge_bases"], p["teams"]) for p in profiles] == [
        ("desk", ["eng-notes"], {"eng-notes": "eng"})
    ]
    # Sharing again changes the access; the grants list says so.
    share(env, "alice", kb_id, team="ops", access="write")
    grants = env.client.get(f"/v1/knowledge-bases/{kb_id}/grants", headers=env.as_("alice"))
    assert [(g["name"], g["access"]) for g in grants.json()] == [("ops", "write")]
    # Revoked: gone for dave at his next request, search included.
    gone = env.client.delete(
        f"/v1/knowledge-bases/{kb_id}/grants/{grant['id']}", headers=env.as_("alice")
    )
    assert gone.status_code == 204
    assert kb_id not in listed(env, "dave")
    gone_from = env.client.get("/v1/profiles", headers=env.as_("dave")).json()
    assert [(p["knowledge_bases"], p["teams"]) for p in gone_from] == [([], {})]
    assert env.client.get(f"/v1/knowledge-bases/{kb_id}", headers=env.as_("dave")).status_code == (
        404
    )
    searched = env.client.post(
        "/v1/search", json={"query": "heron service"}, headers=env.as_("dave")
    )
    # dave sees no base now: a search has nowhere to look (404), and finds nothing.
    assert searched.status_code == 404 and "heron" not in searched.text.lower()
    # His usage still counts the searches he made of it, without naming a base he cannot see.
    used = env.client.get("/v1/usage", headers=env.as_("dave")).json()
    mine = [row for row in used if row["knowledge_base_id"] == kb_id]
    assert mine and all(row["knowledge_base"] is None for row in mine)
    admin_view = env.client.get("/v1/usage", headers=env.as_("admin")).json()
    assert any(row["knowledge_base"] == "eng-notes" for row in admin_view)
    actions = [entry.action for entry in env.lb.accounts.audit_log()]
    assert "share_knowledge_base" in actions and "unshare_knowledge_base" in actions


def test_bad_grants_are_refused_saying_why(env: Env) -> None:
    kb_id = create_kb(env, "alice", "eng-notes", "team", team="eng")
    personal = create_kb(env, "alice", "alice-private", "personal")
    unknown = share(env, "alice", kb_id, team="no-such-team")
    assert unknown.status_code == 404 and "teams list" in unknown.json()["detail"]
    assert share(env, "alice", kb_id, user="nobody").status_code == 404
    # bob sees the base but does not administer it; a grantee with write access neither.
    assert share(env, "bob", kb_id, team="ops").status_code == 403
    share(env, "alice", kb_id, user="carol", access="write")
    refused = share(env, "carol", kb_id, user="erin")
    assert refused.status_code == 403 and "administrators" in refused.json()["detail"]
    assert share(env, "erin", kb_id, team="ops").status_code == 404  # not even seen
    assert share(env, "alice", kb_id, team="eng").status_code == 422  # its own team
    assert share(env, "alice", personal, team="ops").status_code == 422
    both = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/grants",
        json={"team": "ops", "user": "erin"},
        headers=env.as_("alice"),
    )
    assert both.status_code == 422
    missing = env.client.delete(f"/v1/knowledge-bases/{kb_id}/grants/999", headers=env.as_("alice"))
    assert missing.status_code == 404
    # A grantee may not delete the base or change its settings (administering it).
    assert env.client.delete(
        f"/v1/knowledge-bases/{kb_id}", headers=env.as_("carol")
    ).status_code == (403)
