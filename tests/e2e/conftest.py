"""Browser tests: the web page in Debian's headless Chromium driven by Playwright, against a
real server (uvicorn in a thread) on 127.0.0.1 with the fake embedder.

Every page runs with requests to anywhere but 127.0.0.1 aborted and recorded (the test fails
if there was one), every dialog recorded and dismissed, and a screenshot saved into the test's
tmp dir when the test fails. Skips, saying why, when Chromium or Playwright is absent.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
import uvicorn

from e2e.browsing import Server
from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ChatConfig, ServeSettings, Settings
from lorebase.settings.embedders import EmbedderConfig
from lorebase.vault.keys import DataKey
from waiting import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page, Route

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_SECONDS = 10.0
STOP_SECONDS = 5.0
WAIT_MS = 10_000  # the longest a page waits for something it expects


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, lb: Lorebase) -> None:
        super().__init__(config)
        self.lb = lb

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.lb.events.close()  # open event streams end, so shutdown need not wait for them
        await super().shutdown(sockets)


@pytest.fixture
def chat_url() -> str | None:
    """The chat endpoint the server's /v1/ask talks to (a test module may override this)."""
    return None


@pytest.fixture
def chat_model() -> str:
    """The chat model's name the server reports (a test module may override this)."""
    return "stand-in"


@pytest.fixture
def embedding_model() -> str | None:
    """The default embedder's model name (None: the fake's own; a module may override this)."""
    return None


@pytest.fixture
def auth() -> bool:
    """Whether the server wants keys (a test module may override this)."""
    return True


@pytest.fixture
def named_embedders() -> tuple[EmbedderConfig, ...]:
    """The server's named embedders besides ``bundled`` (a test module may override this)."""
    return ()


@pytest.fixture
def server(
    tmp_path: Path,
    chat_url: str | None,
    chat_model: str,
    embedding_model: str | None,
    auth: bool,
    named_embedders: tuple[EmbedderConfig, ...],
) -> Iterator[Server]:
    """A real lorebase server with users admin, alice, bob (alice and bob in team "red",
    carol in team "blue")."""
    serve = ServeSettings(auth=auth, workers=1)
    chat = ChatConfig(url=chat_url, model=chat_model) if chat_url else ChatConfig()
    settings = Settings(
        data_dir=tmp_path / "data", serve=serve, chat=chat, embedders=named_embedders
    )
    embedder = FakeEmbedder(model=embedding_model) if embedding_model else FakeEmbedder()
    lb = open_lorebase(settings=settings, embedder=embedder, data_key=DataKey.generate())
    accounts = lb.accounts
    live = Server(lb, "")
    users = {"admin": Role.ADMIN, "alice": Role.MEMBER, "bob": Role.MEMBER, "carol": Role.MEMBER}
    ids = {}
    for name, role in users.items():
        ids[name] = accounts.create_user(name, role).id
        live.keys[name], _ = accounts.create_key(ids[name])
    red, blue = accounts.create_team("red"), accounts.create_team("blue")
    accounts.set_member(red.id, ids["alice"], Role.ADMIN)
    accounts.set_member(red.id, ids["bob"], Role.MEMBER)
    accounts.set_member(blue.id, ids["carol"], Role.ADMIN)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    live.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(create_app(lb), log_level="warning", access_log=False)
    runner = _Uvicorn(config, lb)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: runner.started or not thread.is_alive(), START_SECONDS, what="the server"
        )
        assert runner.started, "the server did not start"
        yield live
    finally:
        runner.should_exit = True
        thread.join(STOP_SECONDS)
        if thread.is_alive():
            runner.force_exit = True
            thread.join(STOP_SECONDS)
        sock.close()
        lb.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module. Not for the whole session: Playwright's sync API keeps an
    event loop running in the main thread while it is open, and later tests call asyncio.run."""
    if not CHROMIUM.is_file():
        pytest.skip(f"browser test: {CHROMIUM} is absent (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watch:
    """What a page did that it must not: requests leaving 127.0.0.1, dialogs, script errors."""

    external: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def page(
    browser: Browser, watch: Watch, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Page]:
    """A fresh browser context and page: network blocked except 127.0.0.1, dialogs and page
    errors recorded; a screenshot into tmp_path when the test fails."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(WAIT_MS)

    def route(route: Route) -> None:
        host = urlsplit(route.request.url).hostname
        if host == "127.0.0.1":
            route.continue_()
        else:
            watch.external.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    opened = context.new_page()

    def dismiss(dialog: Dialog) -> None:
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", dismiss)
    opened.on("pageerror", lambda error: watch.errors.append(str(error)))
    try:
        yield opened
        assert watch.external == [], f"the page reached outside 127.0.0.1: {watch.external}"
        assert watch.dialogs == [], f"a dialog opened: {watch.dialogs}"
        assert watch.errors == [], f"script errors: {watch.errors}"
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            shot = tmp_path / f"{request.node.name}.png"
            opened.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failing page: {shot}")
        context.close()
