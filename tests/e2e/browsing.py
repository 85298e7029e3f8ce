"""Helpers of the browser tests (their fixtures are in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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
