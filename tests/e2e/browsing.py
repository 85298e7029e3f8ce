"""Helpers of the browser tests (their fixtures are in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from lorebase.app import Lorebase

if TYPE_CHECKING:
    from playwright.sync_api import Page


@dataclass
class Server:
    lb: Lorebase
    url: str
    keys: dict[str, str] = field(default_factory=dict)


def sign_in(page: Page, server: Server, user: str) -> None:
    page.goto(server.url + "/")
    page.fill("#key", server.keys[user])
    page.click("#sign-in button[type=submit]")
    page.wait_for_selector("table#bases tbody tr:not(.loading-row)")


def api(server: Server, user: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A request to the test server as ``user`` (with their key)."""
    headers = {"Authorization": f"Bearer {server.keys[user]}"}
    return httpx.request(method, server.url + path, headers=headers, timeout=5, **kwargs)


def expect(locator: Any) -> Any:
    """Playwright's ``expect`` (imported when a browser test runs, so collection needs none)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)
