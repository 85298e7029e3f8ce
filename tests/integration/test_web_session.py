"""The web page's sign-in over HTTP: an API key exchanged for a session cookie, CSRF protection
of every change made with it, and the page's security headers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.api.guard import SESSION_COOKIE
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

BASE = "http://127.0.0.1"


def _lorebase(tmp_path: Path, auth: bool = True) -> Lorebase:
    settings = Settings(data_dir=tmp_path / "data", serve=ServeSettings(auth=auth, workers=1))
    return open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=DataKey.generate())


@pytest.fixture
def lb(tmp_path: Path) -> Iterator[Lorebase]:
    lorebase = _lorebase(tmp_path)
    yield lorebase
    lorebase.close()


@pytest.fixture
def key(lb: Lorebase) -> str:
    user = lb.accounts.create_user("dana", Role.MEMBER)
    team = lb.accounts.create_team("ops")
    lb.accounts.set_member(team.id, user.id, Role.ADMIN)
    return lb.accounts.create_key(user.id)[0]


def client(lb: Lorebase) -> TestClient:
    return TestClient(create_app(lb, manage=False), base_url=BASE)


def signed_in(lb: Lorebase, key: str) -> tuple[TestClient, str]:
    web = client(lb)
    answer = web.post("/v1/session", json={"key": key})
    assert answer.status_code == 200, answer.text
    return web, answer.json()["csrf"]


def test_a_key_is_exchanged_for_an_httponly_strict_expiring_cookie(lb: Lorebase, key: str) -> None:
    web = client(lb)
    answer = web.post("/v1/session", json={"key": key})
    assert answer.status_code == 200
    body = answer.json()
    assert body["user"] == "dana" and body["auth"] is True and body["csrf"]
    assert body["teams"] == [{"id": 1, "name": "ops", "role": "admin"}]
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=lbs_")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/", "Max-Age="):
        assert attribute.lower() in cookie.lower(), cookie
    assert key not in cookie and key not in answer.text
    # The cookie alone now answers reads, and GET /v1/session tells the same CSRF token.
    assert web.get("/v1/knowledge-bases").status_code == 200
    assert web.get("/v1/session").json()["csrf"] == body["csrf"]


def test_a_bad_key_gets_no_session(lb: Lorebase, key: str) -> None:
    web = client(lb)
    answer = web.post("/v1/session", json={"key": "lb_not-a-key"})
    assert answer.status_code == 401 and "set-cookie" not in answer.headers
    assert web.get("/v1/session").status_code == 401


def test_changes_with_the_cookie_need_the_csrf_token(lb: Lorebase, key: str) -> None:
    web, csrf = signed_in(lb, key)
    body = {"name": "notes", "scope": "personal"}
    refused = web.post("/v1/knowledge-bases", json=body)
    assert refused.status_code == 403 and "X-Lorebase-CSRF" in refused.json()["detail"]
    wrong = web.post("/v1/knowledge-bases", json=body, headers={"X-Lorebase-CSRF": "0" * 64})
    assert wrong.status_code == 403
    assert lb.knowledge_bases() == []
    made = web.post("/v1/knowledge-bases", json=body, headers={"X-Lorebase-CSRF": csrf})
    assert made.status_code == 201
    kb_id = made.json()["id"]
    assert web.delete(f"/v1/knowledge-bases/{kb_id}").status_code == 403
    # A multipart upload (what a cross-site form can send) is refused the same way.
    files = {"files": ("a.md", b"# A\n\ntext\n", "text/markdown")}
    assert web.post(f"/v1/knowledge-bases/{kb_id}/documents", files=files).status_code == 403


def test_a_cross_site_change_is_refused_even_with_the_token(lb: Lorebase, key: str) -> None:
    web, csrf = signed_in(lb, key)
    body = {"name": "notes", "scope": "personal"}
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}):
        answer = web.post(
            "/v1/knowledge-bases", json=body, headers={"X-Lorebase-CSRF": csrf} | headers
        )
        assert answer.status_code == 403, headers
    same = {"X-Lorebase-CSRF": csrf, "Sec-Fetch-Site": "same-origin", "Origin": BASE}
    assert web.post("/v1/knowledge-bases", json=body, headers=same).status_code == 201


def test_no_auth_refuses_cross_site_changes(tmp_path: Path) -> None:
    lorebase = _lorebase(tmp_path, auth=False)
    try:
        web = client(lorebase)
        assert web.get("/v1/session").json()["auth"] is False
        body = {"name": "notes", "scope": "personal"}
        headers = {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
        assert web.post("/v1/knowledge-bases", json=body, headers=headers).status_code == 403
        assert web.post("/v1/knowledge-bases", json=body).status_code == 201
    finally:
        lorebase.close()


def test_keys_need_no_csrf_token(lb: Lorebase, key: str) -> None:
    web = client(lb)
    body = {"name": "notes", "scope": "personal"}
    answer = web.post("/v1/knowledge-bases", json=body, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 201


def test_signing_out_ends_the_session(lb: Lorebase, key: str) -> None:
    web, csrf = signed_in(lb, key)
    token = web.cookies[SESSION_COOKIE]
    assert web.delete("/v1/session").status_code == 403  # forced sign-out needs the token too
    answer = web.delete("/v1/session", headers={"X-Lorebase-CSRF": csrf})
    assert answer.status_code == 204 and "Max-Age=0" in answer.headers["set-cookie"]
    stale = client(lb)
    stale.cookies.set(SESSION_COOKIE, token)
    assert stale.get("/v1/knowledge-bases").status_code == 401


def test_revoking_the_key_ends_its_sessions(lb: Lorebase, key: str) -> None:
    web, _ = signed_in(lb, key)
    assert web.get("/v1/knowledge-bases").status_code == 200
    [record] = lb.accounts.list_keys()
    lb.accounts.revoke_key(record.id)
    assert web.get("/v1/knowledge-bases").status_code == 401


def test_the_page_is_served_with_a_strict_policy(lb: Lorebase) -> None:
    web = client(lb)
    page = web.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert '<script type="module" src="/web/app.js">' in page.text
    assert "<script>" not in page.text and " style=" not in page.text
    script = web.get("/web/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "content-security-policy" in script.headers
    # Unknown paths still answer as problems.
    assert web.get("/nope").headers["content-type"] == "application/problem+json"


def test_the_page_uses_no_html_sinks() -> None:
    """Every text goes in as text: no innerHTML, outerHTML, insertAdjacentHTML, eval or
    document.write anywhere in the page's scripts; no inline handlers or styles in its HTML."""
    static = Path(__file__).resolve().parents[2] / "src" / "lorebase" / "web" / "static"
    for script in static.glob("*.js"):
        source = script.read_text()
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "eval(",
            "document.write",
            "new Function",
        ):
            assert sink not in source, (script.name, sink)
    html = (static / "index.html").read_text()
    assert re.search(r"\son[a-z]+\s*=", html) is None and "style=" not in html


# -- what the page's status view and documents table use --------------------------------------
def test_own_keys_are_listed_made_once_and_revoked(lb: Lorebase, key: str) -> None:
    web = client(lb)
    mine = {"Authorization": f"Bearer {key}"}
    other_key, other = lb.accounts.create_key(lb.accounts.create_user("eli").id)
    [listed] = web.get("/v1/keys", headers=mine).json()
    assert listed["prefix"] == key[:10] and "key" not in listed
    made = web.post("/v1/keys", headers=mine, json={"name": "phone", "expires_in_days": 30})
    assert made.status_code == 201
    new_key, record = made.json()["key"], made.json()["record"]
    assert new_key.startswith("lb_") and record["expires_at"] is not None
    assert lb.accounts.resolve_key(new_key) is not None
    assert new_key not in web.get("/v1/keys", headers=mine).text  # shown once
    # Someone else's key answers like a missing one and stays valid.
    assert web.delete(f"/v1/keys/{other.id}", headers=mine).status_code == 404
    assert lb.accounts.resolve_key(other_key) is not None
    assert web.delete(f"/v1/keys/{record['id']}", headers=mine).status_code == 204
    assert lb.accounts.resolve_key(new_key) is None


def test_status_tells_queue_and_models(lb: Lorebase, key: str) -> None:
    web = client(lb)
    assert web.get("/v1/status").status_code == 401
    body = web.get("/v1/status", headers={"Authorization": f"Bearer {key}"}).json()
    assert body["auth"] is True and body["queue_depth"] == 0 and body["workers"] == 1
    assert body["embedding_model"] and body["chat_host"] == "127.0.0.1"


def test_documents_are_paged_filtered_and_sorted(lb: Lorebase, key: str) -> None:
    web = client(lb)
    mine = {"Authorization": f"Bearer {key}"}
    kb_id = web.post("/v1/knowledge-bases", headers=mine, json={"name": "k"}).json()["id"]
    files = [
        ("files", (f"note-{n:02}.md", f"# N{n}\n\n{'x' * n}\n".encode(), "text/markdown"))
        for n in range(12)
    ]
    assert (
        web.post(f"/v1/knowledge-bases/{kb_id}/documents", headers=mine, files=files).status_code
        == 202
    )
    path = f"/v1/knowledge-bases/{kb_id}/documents"
    page = web.get(path, headers=mine, params={"sort": "name", "limit": 5, "offset": 5})
    assert page.headers["x-total-count"] == "12"
    assert [d["name"] for d in page.json()] == [f"note-{n:02}.md" for n in range(5, 10)]
    largest = web.get(path, headers=mine, params={"sort": "size", "order": "desc", "limit": 1})
    assert largest.json()[0]["name"] == "note-11.md"
    found = web.get(path, headers=mine, params={"q": "NOTE-0"})
    assert found.headers["x-total-count"] == "10" and len(found.json()) == 10
    assert len(web.get(path, headers=mine).json()) == 12  # no limit: every document
    assert web.get(path, headers=mine, params={"limit": 0}).status_code == 422


def test_profiles_list_only_the_bases_you_may_see(lb: Lorebase, key: str) -> None:
    from lorebase.agent.profiles import Profiles

    lb.create_kb("mine", scope="personal", caller=lb.authenticate(key))
    lb.create_kb("hidden", scope="personal")  # the administrators'
    Profiles(lb.settings.data_dir).create(
        "both", ["mine", "hidden"], description="d", writable=["mine", "hidden"]
    )
    answer = client(lb).get("/v1/profiles", headers={"Authorization": f"Bearer {key}"})
    assert answer.json() == [
        {
            "name": "both",
            "description": "d",
            "knowledge_bases": ["mine"],
            "teams": {},  # personal bases belong to no team
            "writable": ["mine"],  # a base you may not see is not named as writable either
        }
    ]
