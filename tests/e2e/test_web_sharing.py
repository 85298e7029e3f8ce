"""The page shares a team's base: its administrator shares it with another team and stops
sharing it; the other team's member sees it listed with its team named, then no longer; a
member who does not administer it is told so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, expect, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page


pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def sign_out(page: Page) -> None:
    page.click("#sign-out")
    page.wait_for_selector("#sign-in")


def test_a_base_is_shared_and_unshared_on_the_page(page: Page, server: Server) -> None:
    body = {"name": "red-runbooks", "scope": "team", "team": "red"}
    kb_id: int = api(server, "alice", "POST", "/v1/knowledge-bases", json=body).json()["id"]
    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator("details.card summary", has_text="Settings and folders").click()
    expect(page.locator("#grants")).to_contain_text("Not shared beyond its team.")
    page.fill("#grant-name", "no-such-team")
    page.click("#share-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("no such team")
    page.fill("#grant-name", "blue")
    page.click("#share-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("Shared with team blue (read-only)")
    expect(page.locator("#grants li")).to_have_count(1)
    sign_out(page)

    sign_in(page, server, "carol")  # blue's admin
    row = page.locator("table#bases tbody tr", has_text="red-runbooks")
    expect(row).to_contain_text("team red")
    expect(row).to_contain_text("shared with you (read-only)")
    sign_out(page)

    sign_in(page, server, "bob")  # a member of red: sees it, does not administer it
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator("details.card summary", has_text="Settings and folders").click()
    expect(page.locator("#sharing")).to_contain_text("Only the base's administrators")
    sign_out(page)

    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator("details.card summary", has_text="Settings and folders").click()
    page.get_by_role("button", name="Stop sharing with team blue").click()
    expect(page.locator("#flash")).to_contain_text("No longer shared with blue")
    listed = api(server, "carol", "GET", "/v1/knowledge-bases").json()
    assert "red-runbooks" not in {kb["name"] for kb in listed}
