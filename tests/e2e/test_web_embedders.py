"""The web page shows each base's embedder and whether it answers, and a new base picks its
embedder from the named ones."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, sign_in
from lorebase.settings.embedders import EmbedderConfig

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def named_embedders() -> tuple[EmbedderConfig, ...]:
    return (
        EmbedderConfig("small", kind="fake", dimensions=32),
        EmbedderConfig(
            "remote",
            url=f"http://127.0.0.1:{_dead_port()}/v1",
            model="nomic-embed-text",
            dimensions=768,
            truncate=256,
        ),
    )


def test_bases_show_their_embedder_and_a_new_one_picks_its_own(page: Page, server: Server) -> None:
    sign_in(page, server, "alice")
    embedder = page.locator("#kb-embedder")
    embedder.locator("option[value='remote']").wait_for(state="attached")
    assert "256 dims" in embedder.locator("option[value='remote']").inner_text()
    page.fill("#kb-name", "notes")
    embedder.select_option("small")
    page.click("#create-kb button[type=submit]")
    row = page.locator("table#bases tr[data-kb]", has_text="notes")
    row.wait_for()
    assert "small" in row.locator(".embedder").inner_text()
    row.locator(".reachable").wait_for()
    assert server.lb.kb("notes").embedder == "small"

    page.fill("#kb-name", "papers")
    embedder.select_option("remote")
    page.click("#create-kb button[type=submit]")
    papers = page.locator("table#bases tr[data-kb]", has_text="papers")
    papers.wait_for()
    problem = papers.locator(".unreachable").inner_text()
    assert "not answering" in problem and "127.0.0.1" in problem and "keyword" in problem


def test_the_status_page_lists_the_embedders_and_which_answer(page: Page, server: Server) -> None:
    sign_in(page, server, "bob")
    page.click("a:text('Status')")
    remote = page.locator("table#embedders tr[data-embedder='remote']")
    remote.locator(".unreachable").wait_for()
    assert "127.0.0.1" in remote.inner_text() and "256" in remote.inner_text()
    page.locator("table#embedders tr[data-embedder='small'] .reachable").wait_for()


def test_a_base_is_moved_to_another_embedder_from_the_page(page: Page, server: Server) -> None:
    server.lb.create_kb("notes", embedder="small")
    sign_in(page, server, "admin")
    row = page.locator("table#bases tr[data-kb]", has_text="notes")
    row.locator("button", has_text="Change…").click()
    row.locator(".reembed select").select_option("remote")  # a server that does not answer
    row.locator(".reembed button", has_text="Re-embed").click()
    refused = page.locator("#flash p.error")
    refused.wait_for()
    assert "remote" in refused.inner_text() and "does not answer" in refused.inner_text()
    assert server.lb.kb("notes").embedder_next is None  # refused: nothing changed

    # The same model again (after a change of its configuration, say): accepted.
    row.locator("button", has_text="Change…").click()
    row.locator(".reembed select").select_option("small")
    row.locator(".reembed button", has_text="Re-embed").click()
    page.locator("#flash p", has_text="Re-embedding “notes” with small").wait_for()
