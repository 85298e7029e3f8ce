"""The page's audit view: an administrator sees every change with who made it and from
where, narrowed by a date (a malformed one is refused saying the forms); others have no tab."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, expect, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page


pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_an_administrator_reads_the_audit_log(page: Page, server: Server) -> None:
    body = {"name": "red-notes", "scope": "team", "team": "red"}
    kb_id = api(server, "alice", "POST", "/v1/knowledge-bases", json=body).json()["id"]
    api(server, "alice", "POST", f"/v1/knowledge-bases/{kb_id}/grants", json={"team": "blue"})
    sign_in(page, server, "bob")
    assert page.locator("#audit-tab").is_hidden()
    page.click("#sign-out")
    page.wait_for_selector("#sign-in")

    sign_in(page, server, "admin")
    page.click("#audit-tab")
    row = page.locator('#audit tr[data-action="share_knowledge_base"]')
    expect(row).to_have_count(1)
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text("127.0.0.1")
    expect(page.locator('#audit tr[data-action="create_knowledge_base"]')).to_have_count(1)
    page.fill("#audit-since", "last week")
    page.click("#audit-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("YYYY-MM-DD")
    page.fill("#audit-since", "2999")
    page.click("#audit-form button[type=submit]")
    expect(page.locator("#audit tbody")).to_contain_text("No changes recorded.")


def test_the_usage_view_shows_each_users_own_calls(page: Page, server: Server) -> None:
    kb_id = api(server, "bob", "POST", "/v1/knowledge-bases", json={"name": "bob-notes"}).json()[
        "id"
    ]
    api(server, "bob", "POST", f"/v1/knowledge-bases/{kb_id}/notes", json={"text": "Heron day."})
    api(server, "alice", "POST", "/v1/search", json={"query": "anything at all"})
    sign_in(page, server, "bob")
    page.click('#nav a[href="#/usage"]')
    rows = page.locator("#usage tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("bob-notes")
    assert int(rows.first.locator(".tokens").inner_text()) > 0
    page.fill("#usage-since", "not a date")
    page.click("#usage-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("YYYY-MM-DD")
