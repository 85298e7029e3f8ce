"""The page's frictions of issue 35, each in a real browser: every view fits a phone's width,
a request under way shows, the file chooser is a labelled button, sign-in says where a key
comes from, Ask says which chat model answers (or that none does) and keeps conversations,
dark mode, and a slow view's answer never overwrites a later one."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from chat_stand_in import StandIn, Turn
from e2e.browsing import Server, api, sign_in
from lorebase.settings.embedders import EmbedderConfig
from waiting import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route, ViewportSize

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
LONG_BASE = "field-notes-of-the-northern-wetlands-survey-" + "x" * 20
LONG_MODEL = "nomic-ai/nomic-embed-text-v1.5-GGUF-Q8_0-with-a-very-long-suffix-" + "y" * 20
LONG_CHAT = "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo-long-deployment-name-" + "z" * 20
LONG_FILE = "heron-feeding-behaviour-in-shallow-water-observations-2025-" + "w" * 20 + ".md"
HERON = "# Herons\n\n## Feeding\n\nThe grey heron hunts fish in shallow water at dawn.\n"
DARK_BACKGROUND = "rgb(13, 17, 23)"
LIGHT_BACKGROUND = "rgb(255, 255, 255)"

# Every element's box within the window, and the page's own width.
OVERFLOW = """() => {
    const w = window.innerWidth;
    const wide = [];
    for (const el of document.querySelectorAll("body *")) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.right > w + 1 || r.left < -1) {
            const name = `${el.tagName}#${el.id}.${el.className}`;
            wide.push(`${name} ${Math.round(r.left)}..${Math.round(r.right)}`);
        }
    }
    return {scroll: document.documentElement.scrollWidth, inner: w, wide: wide.slice(0, 8)};
}"""


def base_with_a_document(server: Server, user: str = "alice") -> tuple[int, int]:
    """A base with a long name and one indexed note with a long file name: (base, document)."""
    made = api(server, user, "POST", "/v1/knowledge-bases", json={"name": LONG_BASE[:64]})
    kb_id: int = made.json()["id"]
    api(server, user, "PATCH", f"/v1/knowledge-bases/{kb_id}", json={"description": "d" * 300})
    files = {"files": (LONG_FILE, HERON.encode(), "text/markdown")}
    uploaded = api(server, user, "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
    (doc_id,) = [d["id"] for d in uploaded.json()["documents"]]
    lb = server.lb
    wait_until(lambda: lb.document_in(lb.kb_by_id(kb_id), doc_id).state.value == "indexed")
    return kb_id, doc_id


@dataclass
class Held:
    """Requests matching ``matches`` (a URL predicate), held until :meth:`release`.

    A held request goes on through :meth:`Route.fallback`, to the context's own handler (the
    one that lets 127.0.0.1 through), and so does every later one: the handler stays. Taking it
    away (``page.unroute``) would change what the browser sends Playwright while requests are
    on their way to it, and the driver answers those itself: the context's handler then finds
    them already handled (seen in CI as "Route is already handled!" and a view that never
    filled)."""

    page: Page
    matches: Callable[[str], bool]
    routes: list[Route] = field(default_factory=list)
    released: bool = False

    def __post_init__(self) -> None:
        self.page.route(self.matches, self.keep)

    def keep(self, route: Route) -> None:
        if self.released:
            route.fallback()
        else:
            self.routes.append(route)

    def wait(self) -> None:
        """Wait (letting Playwright dispatch its events) until a request is held."""
        for _ in range(200):
            if self.routes:
                return
            self.page.wait_for_timeout(50)
        raise AssertionError("the request to hold was never made")

    def release(self) -> None:
        self.wait()
        self.released = True
        while self.routes:
            self.routes.pop(0).fallback()


@pytest.fixture
def chat_model() -> str:
    return LONG_CHAT


@pytest.fixture
def embedding_model() -> str:
    return LONG_MODEL


@pytest.fixture
def named_embedders() -> tuple[EmbedderConfig, ...]:
    return (EmbedderConfig("small-" + "s" * 40, kind="fake", dimensions=32, model=LONG_MODEL),)


@pytest.fixture
def chat_url(stand_in: StandIn) -> str:
    return stand_in.url


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["390", "1280"])
def test_every_view_fits_the_screen(page: Page, server: Server, size: ViewportSize) -> None:
    kb_id, doc_id = base_with_a_document(server)
    page.set_viewport_size(size)
    page.goto(server.url + "/")
    page.wait_for_selector("#sign-in")
    fits = page.evaluate(OVERFLOW)
    assert fits["scroll"] <= fits["inner"] and not fits["wide"], ("sign-in", fits)
    sign_in(page, server, "alice")
    views = {
        "#/bases": "table#bases tbody tr[data-kb]",
        f"#/kb/{kb_id}": '#documents tr[data-state="indexed"]',
        f"#/search?q=heron%20fish&kb={kb_id}": ".hit",
        f"#/doc/{doc_id}": "ol.text li",
        "#/ask": "#chat-model",
        "#/status": "#embedders td.num",
    }
    for view, ready in views.items():
        page.goto(f"{server.url}/{view}")
        page.wait_for_selector(ready)
        page.wait_for_load_state("networkidle")
        fits = page.evaluate(OVERFLOW)
        assert fits["scroll"] <= fits["inner"] and not fits["wide"], (view, fits)
    # The long names are there, wrapped, not cut.
    page.goto(f"{server.url}/#/status")
    page.wait_for_selector("#embedders td.num")
    assert LONG_MODEL in page.locator("dl.status").inner_text()


def test_a_request_under_way_shows(page: Page, server: Server, tmp_path: Path) -> None:
    kb_id, doc_id = base_with_a_document(server)
    sign_in(page, server, "alice")

    # A list: the view says it loads until the bases are there.
    def bases(url: str) -> bool:
        return url.endswith("/v1/knowledge-bases")

    listing = Held(page, bases)
    page.goto(f"{server.url}/#/status")
    page.locator("main h1", has_text="Status").wait_for()
    page.click("#nav a[href='#/bases']")
    page.locator("#view .loading", has_text="Loading").wait_for()
    listing.release()
    page.locator("table#bases tbody tr[data-kb]").wait_for()
    assert page.locator("#view .loading").count() == 0

    # A search: "Searching…", the results busy, the button off; then the hits.
    searching = Held(page, lambda url: url.endswith("/v1/search"))
    page.goto(f"{server.url}/#/search?q=heron&kb={kb_id}")
    page.locator("#results .loading", has_text="Searching").wait_for()
    assert page.locator("#results").get_attribute("aria-busy") == "true"
    assert page.locator("#search button[type=submit]").is_disabled()
    assert page.locator("#busy").is_visible()
    searching.release()
    page.locator(".hit").first.wait_for()
    assert page.locator("#results .loading").count() == 0
    assert page.locator("#results").get_attribute("aria-busy") is None
    assert page.locator("#search button[type=submit]").is_enabled()
    page.locator("#busy").wait_for(state="hidden")

    # Opening a document: the view says it loads until it is there.
    def the_document(url: str) -> bool:
        return url.endswith(f"/v1/documents/{doc_id}")

    opening = Held(page, the_document)
    page.goto(f"{server.url}/#/doc/{doc_id}")
    page.locator("#view .loading", has_text="Loading").wait_for()
    assert page.locator("#view > .view").get_attribute("aria-busy") == "true"
    opening.release()
    page.locator("h1", has_text="heron-feeding").wait_for()
    assert page.locator("#view .loading").count() == 0
    assert page.locator("#view > .view").get_attribute("aria-busy") is None

    # An upload: the drop zone says how many files are still going.
    def uploads(url: str) -> bool:
        return url.endswith(f"/v1/knowledge-bases/{kb_id}/documents")

    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator('#documents tr[data-state="indexed"]').wait_for()
    sending = Held(page, uploads)
    (tmp_path / "egret.md").write_text("# Egrets\n\nLittle egrets stir the mud with their feet.\n")
    page.set_input_files("#upload-files", str(tmp_path / "egret.md"))
    page.locator("#drop .loading", has_text="Uploading 1 file").wait_for()
    assert page.locator("#drop").get_attribute("aria-busy") == "true"
    sending.release()
    page.locator("#uploads li[data-outcome=accepted]").wait_for()
    page.locator("#drop .loading").wait_for(state="detached")
    assert page.locator("#drop").get_attribute("aria-busy") is None


def test_the_file_chooser_is_a_labelled_button(page: Page, server: Server, tmp_path: Path) -> None:
    kb_id = api(server, "alice", "POST", "/v1/knowledge-bases", json={"name": "b"}).json()["id"]
    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    button = page.locator("#drop label.file-button[for=upload-files]")
    button.wait_for()
    assert button.inner_text() == "Choose files to upload…"
    assert page.evaluate(
        "getComputedStyle(document.querySelector('label.file-button')).cursor"
    ) == ("pointer")
    # The native control is kept (focusable, named by its label) but not drawn.
    native = page.locator("#upload-files")
    box = native.bounding_box()
    assert box is not None and box["width"] <= 1 and box["height"] <= 1
    native.focus()
    assert page.evaluate("document.activeElement.id") == "upload-files"
    assert page.evaluate("document.activeElement.labels[0].textContent").startswith("Choose")
    (tmp_path / "note.md").write_text("# Note\n\nA short note about herons.\n")
    with page.expect_file_chooser() as chosen:
        button.click()
    chosen.value.set_files(str(tmp_path / "note.md"))
    page.locator("#uploads li[data-outcome=accepted]").wait_for()


def test_sign_in_says_where_a_key_comes_from(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    words = page.locator("#sign-in").inner_text()
    assert "lorebase serve" in words
    assert "lorebase keys create USER" in words
    assert "administrator" in words
    assert page.locator("#key").get_attribute("aria-describedby") == "key-help"


def test_ask_says_which_model_answers_and_keeps_conversations(
    page: Page, server: Server, stand_in: StandIn
) -> None:
    base_with_a_document(server)
    stand_in.script = [
        Turn(text="Looking. ", calls=[("search_knowledge_base", {"query": "heron fish"})]),
        Turn(text="Grey herons hunt fish at dawn [1]."),
        Turn(text="In shallow water [1]."),
    ]
    sign_in(page, server, "alice")
    page.goto(f"{server.url}/#/ask")
    model = page.locator("#chat-model")
    model.wait_for()
    assert LONG_CHAT in model.inner_text() and "127.0.0.1" in model.inner_text()
    assert page.locator("#conversations li", has_text="None yet").count() == 1

    # While the answer is on its way, the page says so and the button is off.
    asking = Held(page, lambda url: url.endswith("/v1/ask"))
    page.fill("#question", "What do herons eat?")
    page.click("#ask button[type=submit]")
    page.locator("#answer .loading", has_text=f"Asking {LONG_CHAT}").wait_for()
    assert page.locator("#ask").get_attribute("aria-busy") == "true"
    assert page.locator("#ask button[type=submit]").is_disabled()
    asking.release()
    page.locator("#sources li").first.wait_for()
    assert page.locator("#answer .loading").count() == 0
    assert page.locator("#ask").get_attribute("aria-busy") is None
    conversations = page.locator("#conversations li[data-conversation]")
    conversations.first.wait_for()
    assert "What do herons eat?" in conversations.first.inner_text()

    # The follow-up carries the first turn to the model.
    page.fill("#question", "Where?")
    page.click("#ask button[type=submit]")
    page.locator("#answer", has_text="In shallow water").wait_for()
    page.locator("#ask button[type=submit]:enabled").wait_for()
    messages = stand_in.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "What do herons eat?"
    assert messages[2]["content"] == "Grey herons hunt fish at dawn [1]."
    assert messages[3]["content"] == "Where?"
    assert "What do herons eat?" in page.locator("#conversation").inner_text()

    # Kept in this browser for this user (never the key), listed, opened again, deleted.
    stored = page.evaluate("JSON.stringify({...localStorage})")
    assert "lorebase.conversations.alice" in stored and server.keys["alice"] not in stored
    page.click("#new-conversation")
    assert page.locator("#conversation .turn").count() == 0
    page.reload()
    conversations.first.wait_for()
    assert conversations.count() == 1 and "2 questions" in conversations.first.inner_text()
    conversations.first.locator("button.link").first.click()
    turns = page.locator("#conversation .turn")
    assert turns.count() == 2
    assert "In shallow water" in turns.nth(1).inner_text()
    assert turns.nth(0).locator(".sources a").first.get_attribute("href", timeout=1000)
    conversations.first.get_by_role("button", name="Delete the conversation").click()
    assert conversations.count() == 0 and page.locator("#conversation .turn").count() == 0
    kept = json.loads(page.evaluate("localStorage.getItem('lorebase.conversations.alice')"))
    assert kept == []

    # Another user of the same browser does not see them.
    page.fill("#question", "What do herons eat?")
    stand_in.script = [Turn(text="Fish [1].")]
    page.click("#ask button[type=submit]")
    conversations.first.wait_for()
    page.click("#sign-out")
    page.wait_for_selector("#sign-in")
    # Signing out clears them: answers quote the bases, and a browser may be shared.
    assert page.evaluate("localStorage.getItem('lorebase.conversations.alice')") is None
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/ask")
    page.locator("#conversations li", has_text="None yet").wait_for()


def test_dark_mode_follows_the_system_and_the_switch(page: Page, server: Server) -> None:
    def background() -> str:
        return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))

    page.emulate_media(color_scheme="dark")
    sign_in(page, server, "alice")
    assert background() == DARK_BACKGROUND
    switch = page.locator("header #theme")
    assert switch.get_attribute("aria-pressed") == "true"
    switch.click()
    assert background() == LIGHT_BACKGROUND and switch.get_attribute("aria-pressed") == "false"
    page.reload()
    page.wait_for_selector("table#bases")
    assert background() == LIGHT_BACKGROUND  # remembered

    page.emulate_media(color_scheme="light")
    page.evaluate("localStorage.removeItem('lorebase.theme')")
    page.reload()
    page.wait_for_selector("table#bases")
    assert background() == LIGHT_BACKGROUND
    page.locator("header #theme").click()
    assert background() == DARK_BACKGROUND
    page.reload()
    page.wait_for_selector("table#bases")
    assert background() == DARK_BACKGROUND


@pytest.fixture
def slow_view(server: Server) -> int:
    return base_with_a_document(server)[1]


def test_a_slow_view_never_overwrites_a_later_one(
    page: Page, server: Server, slow_view: int
) -> None:
    doc_id = slow_view
    sign_in(page, server, "alice")

    def the_document(url: str) -> bool:
        return url.endswith(f"/v1/documents/{doc_id}")

    opening = Held(page, the_document)
    page.goto(f"{server.url}/#/doc/{doc_id}")
    opening.wait()
    page.click("#nav a[href='#/search']")
    page.locator("main h1", has_text="Search").wait_for()
    with page.expect_response(lambda response: "/chunks" in response.url):
        opening.release()
    page.wait_for_timeout(300)  # the slow view would have drawn itself by now
    assert page.locator("main h1").inner_text() == "Search"
    assert page.locator("#nav a[aria-current=page]").inner_text() == "Search"
    assert page.locator("#q").is_visible()
