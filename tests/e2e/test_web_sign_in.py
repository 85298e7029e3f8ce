"""Signing in and out of the web page in a real browser, and the page without keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_the_key_is_not_kept_and_signing_out_ends_the_session(page: Page, server: Server) -> None:
    sign_in(page, server, "bob")
    key = server.keys["bob"]
    [cookie] = page.context.cookies()
    assert (
        cookie["name"] == "lorebase_session"
        and cookie["httpOnly"]
        and cookie["sameSite"] == "Strict"
    )
    assert cookie["expires"] > 0 and key not in cookie["value"]
    stored = page.evaluate(
        "JSON.stringify({...localStorage}) + JSON.stringify({...sessionStorage})"
    )
    assert key not in stored and page.evaluate("document.cookie") == ""
    page.click("#sign-out")
    page.wait_for_selector("#sign-in")
    assert page.context.cookies() == []
    page.reload()
    page.wait_for_selector("#sign-in")
    # The ended session's token no longer works, even if someone kept it.
    # Playwright types the cookies it reads (Cookie) apart from those it sets: the same dict.
    page.context.add_cookies([cookie])  # type: ignore[list-item]
    page.reload()
    page.wait_for_selector("#sign-in")


def test_a_wrong_key_is_refused_in_words(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    page.fill("#key", "lb_not-a-key")
    page.click("#sign-in button[type=submit]")
    page.locator(".flash.error", has_text="not valid").wait_for()


def test_status_shows_the_server_and_manages_own_keys(page: Page, server: Server) -> None:
    sign_in(page, server, "carol")
    page.click("nav a:text('Status')")
    page.wait_for_selector("table#keys tbody tr[data-key]")
    assert "waiting of" in page.locator("dl.status").inner_text()
    page.fill("#key-name", "laptop")
    # Signed in with a session: a new key needs one of carol's keys again, and is its child.
    page.fill("#key-parent", server.keys["carol"])
    page.click("#create-key button[type=submit]")
    new_key = page.locator("#new-key code").inner_text()
    assert new_key.startswith("lb_") and server.lb.accounts.resolve_key(new_key) is not None
    made = next(k for k in server.lb.accounts.list_keys() if k.name == "laptop")
    assert made.parent_id == server.lb.accounts.key_id_of(server.keys["carol"])
    row = page.locator("table#keys tr[data-key]", has_text="laptop")
    row.locator("button:text('Revoke')").click()
    row.locator("td", has_text="revoked").wait_for()
    assert server.lb.accounts.resolve_key(new_key) is None
