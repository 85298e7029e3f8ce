"""Ask on a server without a chat model: the page says so before anything is typed, in a
browser's words (nothing of the command line's options), and its button is off."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_ask_says_up_front_that_no_chat_model_is_set_up(page: Page, server: Server) -> None:
    assert server.lb.settings.chat.model is None
    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/ask")
    said = page.locator("#chat-model")
    said.wait_for()
    assert "No chat model is set up on this server" in said.inner_text()
    assert "operator" in said.inner_text()
    assert page.locator("#ask button[type=submit]").is_disabled()
    page.fill("#question", "What do herons eat?")
    page.locator("#question").press("Enter")  # a newline, and no request either way
    assert page.locator("#ask button[type=submit]").is_disabled()
    words = page.locator("body").inner_text()
    for cli in ("--model", "LOREBASE_CHAT_MODEL", "LOREBASE_CHAT_URL"):
        assert cli not in words
