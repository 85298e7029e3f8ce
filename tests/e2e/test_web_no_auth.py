"""With keys off (loopback only), the page needs no sign-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


@pytest.fixture
def auth() -> bool:
    return False


def test_the_page_opens_without_sign_in(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("table#bases tbody tr")
    assert page.locator("#sign-in").count() == 0
    assert "no sign-in" in page.locator("#who").inner_text()
    assert page.locator("#sign-out").is_hidden()
    page.fill("#kb-name", "notes")
    page.click("#create-kb button[type=submit]")
    page.locator("table#bases a", has_text="notes").wait_for()
