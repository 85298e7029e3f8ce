"""Ask on the web page: the answer streams from POST /v1/ask (a stand-in OpenAI-compatible chat
server on 127.0.0.1 that calls the search tool), its numbered sources open the cited passage,
and only the bases switched on reach the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from chat_stand_in import StandIn, Turn
from e2e.browsing import Server, sign_in
from lorebase.agent.profiles import Profiles

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

HERON = "# Herons\n\n## Feeding\n\nThe grey heron hunts fish in shallow water at dawn.\n"
ANSWER = "Grey herons hunt fish at dawn [1]."


@pytest.fixture
def answers(stand_in: StandIn) -> StandIn:
    """First turn: a search_knowledge_base call; then the answer, streamed in pieces."""
    stand_in.script = [
        Turn(text="Looking. ", calls=[("search_knowledge_base", {"query": "heron fish"})]),
        Turn(text=ANSWER),
    ]
    return stand_in


@pytest.fixture
def chat_url(answers: StandIn) -> str:
    return answers.url


def test_the_answer_streams_and_its_sources_open(
    page: Page, server: Server, stand_in: StandIn
) -> None:
    headers = {"Authorization": f"Bearer {server.keys['alice']}"}
    ids = {}
    for name in ("birds", "cooking"):
        made = httpx.post(
            f"{server.url}/v1/knowledge-bases",
            headers=headers,
            timeout=5,
            json={"name": name, "scope": "personal"},
        )
        ids[name] = made.json()["id"]
    files = {"files": ("heron.md", HERON.encode(), "text/markdown")}
    httpx.post(
        f"{server.url}/v1/knowledge-bases/{ids['birds']}/documents",
        headers=headers,
        files=files,
        timeout=5,
    )
    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/kb/{ids['birds']}")
    page.locator('#documents tr[data-state="indexed"]').wait_for()

    Profiles(server.lb.settings.data_dir).create("birding", ["birds"], description="birds only")
    page.goto(f"{server.url}/#/ask")
    page.fill("#question", "What do herons eat?")
    page.select_option("#ask-profile", "birding")  # switches on its bases, and only those
    assert page.locator("label.toggle", has_text="cooking").locator("input").is_checked() is False
    assert page.locator("label.toggle", has_text="birds").locator("input").is_checked()
    page.click("#ask button[type=submit]")
    page.locator("#sources li").first.wait_for()
    assert page.locator("#answer").inner_text() == ANSWER
    assert "is local" in page.locator("#notice").inner_text()
    assert "search_knowledge_base" in page.locator("ul.tools").inner_text()
    # Only the base switched on reached the model.
    system = stand_in.requests[0]["messages"][0]["content"]
    assert "birds" in system and "cooking" not in system

    page.locator("#sources li a").first.click()
    page.wait_for_selector("#passage")
    assert "grey heron" in page.locator("#passage").inner_text()
