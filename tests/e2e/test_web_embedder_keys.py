"""The status view keeps a user's own key for an HTTP embedder: set (never shown back),
listed by name, removed; a non-HTTP embedder is not offered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, expect, sign_in
from embed_stand_in import MODEL, EmbeddingServer
from lorebase.settings.embedders import EmbedderConfig

if TYPE_CHECKING:
    from playwright.sync_api import Page


pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]
SECRET = "sk-page-0123456789"


@pytest.fixture
def stand_in() -> Iterator[EmbeddingServer]:
    running = EmbeddingServer(dim=32).start()
    yield running
    running.stop()


@pytest.fixture
def named_embedders(stand_in: EmbeddingServer) -> tuple[EmbedderConfig, ...]:
    return (EmbedderConfig("remote", url=stand_in.url, model=MODEL, dimensions=32),)


def test_a_user_keeps_and_removes_their_own_embedder_key(page: Page, server: Server) -> None:
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/status")
    expect(page.locator("#embedder-keys")).to_contain_text("None")
    assert page.locator("#own-embedder option").all_inner_texts() == ["remote"]
    page.fill("#own-key", SECRET)
    page.click("#own-key-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("Your key for remote is kept")
    expect(page.locator('#embedder-keys li[data-embedder="remote"]')).to_have_count(1)
    assert SECRET not in page.content()
    page.get_by_role("button", name="Remove your key for remote").click()
    expect(page.locator("#flash")).to_contain_text("removed")
    expect(page.locator("#embedder-keys")).to_contain_text("None")
