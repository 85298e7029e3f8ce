"""The web page's screenshots in docs/, made again: one command (`make screenshots`).

    python bench/screenshots.py [--out docs]

Starts a real server on 127.0.0.1 (keys on, the fake embedder, a chat model named but not
called) in a temporary folder, signs a user in, uploads a few sample notes to two bases, keeps
one Ask conversation in the browser (as the page keeps them), and saves PNGs of the views at
1280 px and 390 px wide (a phone), one of them dark. Each PNG is reduced to a 128-colour
palette, so all of them stay well under 1 MB. Needs Debian's Chromium (/usr/bin/chromium) and
playwright (the dev extra).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from PIL import Image

import local_server  # bench/local_server.py (the script's folder is first on sys.path)
from lorebase.accounts.base import Role
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ChatConfig, ServeSettings, Settings
from lorebase.vault.keys import DataKey

if TYPE_CHECKING:
    from playwright.sync_api import Page, ViewportSize

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
PALETTE_COLOURS = 128
INDEX_SECONDS = 60.0
USER = "ada"

NOTES = {
    "field-notes": {
        "heron.md": "# Herons\n\n## Feeding\n\nThe grey heron hunts fish, frogs and small "
        "mammals in shallow water, standing still for long minutes before it strikes. It "
        "feeds mostly at dawn and dusk.\n\n## Nesting\n\nHerons nest in colonies, called "
        "heronries, high in tall trees near water.\n",
        "kestrel.md": "# Kestrels\n\nKestrels hover over fields and road verges, then dive "
        "on voles and beetles. A hovering kestrel keeps its head perfectly still.\n",
        "owl.md": "# Barn owls\n\nBarn owls hunt voles by sound in complete darkness; their "
        "facial disc gathers sound like a dish.\n",
        "wetland-survey-2025.md": "# Wetland survey 2025\n\n## Method\n\nWe counted herons, "
        "egrets and ducks along the river every Saturday at dawn.\n\n## Results\n\nThe "
        "heron count rose from 12 to 19 birds; egrets nested here for the first time.\n",
    },
    "handbook": {
        "vacation.md": "# Vacation\n\nUnused vacation days carry over to the next year, up "
        "to ten days.\n",
        "expenses.md": "# Expenses\n\nTravel expenses are reimbursed within thirty days when "
        "receipts are attached.\n",
    },
}
QUESTION = "When do herons feed, and what do they eat?"
ANSWER = (
    "Grey herons feed mostly at dawn and dusk [1]. They hunt fish, frogs and small mammals in "
    "shallow water, standing still for long minutes before they strike [1]."
)


@dataclass
class Live:
    url: str
    key: str


@contextmanager
def serving(folder: Path) -> Iterator[Live]:
    """A server with one user and the sample notes indexed."""
    settings = Settings(
        data_dir=folder,
        serve=ServeSettings(auth=True, workers=1),
        chat=ChatConfig(url="http://127.0.0.1:11434/v1", model="llama3.1:8b"),
    )
    lb = open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=DataKey.generate())
    user = lb.accounts.create_user(USER, Role.ADMIN)
    key, _ = lb.accounts.create_key(user.id)
    with local_server.serving(lb, join_seconds=5) as url:
        headers = {"Authorization": f"Bearer {key}"}
        for name, notes in NOTES.items():
            made = httpx.post(
                f"{url}/v1/knowledge-bases",
                headers=headers,
                json={"name": name, "description": f"sample {name.replace('-', ' ')}"},
            )
            kb = made.raise_for_status().json()["id"]
            files = [("files", (n, text.encode(), "text/markdown")) for n, text in notes.items()]
            httpx.post(
                f"{url}/v1/knowledge-bases/{kb}/documents", headers=headers, files=files
            ).raise_for_status()
            deadline = time.monotonic() + INDEX_SECONDS
            while lb.kb_by_id(kb, totals=True).indexed < len(notes):
                if time.monotonic() > deadline:
                    raise SystemExit(f"the sample base {name} was not indexed in time")
                time.sleep(0.1)
        yield Live(url, key)


def conversation(live: Live) -> dict[str, Any]:
    """One Ask conversation as the page keeps it (its source is a real passage)."""
    headers = {"Authorization": f"Bearer {live.key}"}
    found = httpx.post(
        f"{live.url}/v1/search", headers=headers, json={"query": "heron feeding", "top_k": 1}
    )
    hit = found.raise_for_status().json()["hits"][0]
    source = {
        "number": 1,
        "citation": hit["citation"],
        "document_id": hit["document_id"],
        "chunk_id": hit["chunk_id"],
        "knowledge_base": hit["knowledge_base"],
    }
    turn = {"question": QUESTION, "answer": ANSWER, "sources": [source]}
    return {"id": "sample", "title": QUESTION, "updated": time.time() * 1000, "turns": [turn]}


def save(page: Page, path: Path) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(200)  # the busy bar's last frame
    page.screenshot(path=str(path))
    with Image.open(path) as shot:
        small = shot.convert("RGB").quantize(colors=PALETTE_COLOURS)
    small.save(path, optimize=True)
    print(
        f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
        f"{path.stat().st_size // 1024} KB"
    )


def shoot(live: Live, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.goto(live.url + "/")
        page.fill("#key", live.key)
        page.click("#sign-in button[type=submit]")
        page.wait_for_selector("table#bases tbody tr[data-kb]")
        kept = json.dumps([conversation(live)])
        page.evaluate("(kept) => localStorage.setItem('lorebase.conversations.ada', kept)", kept)
        search = f"{live.url}/#/search?q=heron%20feeding%20dawn&kb=&mode=hybrid&f="

        def ask() -> None:
            page.goto(f"{live.url}/#/ask")
            page.locator("#conversations button.link").first.click()
            page.wait_for_selector("#conversation .turn")

        for size, suffix in ((DESKTOP, ""), (PHONE, "-390")):
            page.set_viewport_size(size)
            page.goto(f"{live.url}/#/bases")
            page.wait_for_selector("table#bases tbody tr[data-kb]")
            save(page, out / f"web-bases{suffix}.png")
            page.goto(search)
            page.wait_for_selector(".hit")
            save(page, out / f"web-search{suffix}.png")
            if not suffix:
                page.locator(".hit a.citation").first.click()
                page.wait_for_selector("#passage")
                save(page, out / "web-document.png")
                ask()
                save(page, out / "web-ask.png")
        page.emulate_media(color_scheme="dark")
        ask()
        save(page, out / "web-ask-390-dark.png")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where the PNGs go")
    args = parser.parse_args()
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"screenshots need {CHROMIUM} (apt-get install -y chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, serving(Path(folder)) as live:
        shoot(live, args.out)


if __name__ == "__main__":
    main()
