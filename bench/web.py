"""The web page's weight and speed in headless Chromium: bytes sent for the first view, and how
long a search takes to show its hits against how long the API takes to answer it.

    python bench/web.py [--docs 200]

Needs Debian's Chromium (/usr/bin/chromium) and playwright (the dev extra). Runs a real server
on 127.0.0.1 (keys off, fake embedder) in a temporary folder.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

import local_server  # bench/local_server.py (the script's folder is first on sys.path)
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

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
WORDS = (
    "heron",
    "kestrel",
    "owl",
    "fish",
    "vole",
    "beetle",
    "field",
    "water",
    "dawn",
    "night",
    "hunt",
    "hover",
    "dive",
)


# Click a button (value None) or type into a field, then wait until the documents view shows
# the change (a header's aria-sort, or the pager's text); answers the milliseconds it took.
TIMED = """([selector, value, expected]) => new Promise((done) => {
    const started = performance.now();
    const shown = () => expected === "aria-sort"
        ? document.querySelector("th[data-key=size]").getAttribute("aria-sort") === "ascending"
        : document.querySelector(".pager").textContent.includes(expected);
    const observer = new MutationObserver(() => {
        if (shown()) { observer.disconnect(); done(performance.now() - started); }
    });
    observer.observe(document.querySelector("main"), {subtree: true, childList: true,
                                                        attributes: true, characterData: true});
    const target = document.querySelector(selector);
    if (value === null) target.click();
    else { target.value = value; target.dispatchEvent(new Event("input", {bubbles: true})); }
})"""


def note(n: int) -> tuple[str, tuple[str, io.BytesIO, str]]:
    text = f"# Note {n}\n\n{' '.join(WORDS[(n + i) % len(WORDS)] for i in range(40))}\n"
    return ("files", (f"note-{n}.md", io.BytesIO(text.encode()), "text/markdown"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=200, help="documents in the base")
    parser.add_argument("--searches", type=int, default=10)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            data_dir=Path(folder),
            serve=ServeSettings(auth=False, workers=1, queue_size=args.docs + 100),
        )
        lb = open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=DataKey.generate())
        with local_server.serving(lb) as url:
            kb = httpx.post(f"{url}/v1/knowledge-bases", json={"name": "bench"}).json()["id"]
            for start in range(0, args.docs, 50):
                files = [note(n) for n in range(start, min(args.docs, start + 50))]
                answer = httpx.post(
                    f"{url}/v1/knowledge-bases/{kb}/documents", files=files, timeout=60
                )
                answer.raise_for_status()
            while lb.kb_by_id(kb, totals=True).indexed < args.docs:
                time.sleep(0.2)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
                )
                page = browser.new_page()
                sizes: dict[str, int] = {}

                def count(request: Any) -> None:
                    measured = request.sizes()
                    sizes[request.url] = (
                        measured["responseBodySize"] + measured["responseHeadersSize"]
                    )

                page.on("requestfinished", count)
                page.goto(url + "/")
                page.wait_for_selector("table#bases tbody tr")
                page.wait_for_load_state("networkidle")
                assets = sum(v for k, v in sizes.items() if "/v1/" not in k)
                print(
                    f"first view: {len(sizes)} requests, {sum(sizes.values())} bytes "
                    f"({assets} bytes of page assets, the rest API answers)"
                )
                page.goto(f"{url}/#/kb/{kb}")
                started = time.perf_counter()
                page.locator("#documents tr[data-doc]").nth(99).wait_for()
                print(
                    f"documents view of {args.docs}: first page shown in "
                    f"{(time.perf_counter() - started) * 1000:.0f} ms"
                )
                # Timed inside the page (a MutationObserver on the table), not by polling.
                sort_ms = page.evaluate(TIMED, ["th[data-key=size] button", None, "aria-sort"])
                print(f"  sorted by size, first page redrawn in {sort_ms:.0f} ms")
                needle = "note-99"
                matches = sum(needle in f"note-{n}.md" for n in range(args.docs))
                filter_ms = page.evaluate(TIMED, ["#doc-filter", needle, f"({matches} documents)"])
                print(
                    f"  filtered to {matches} in {filter_ms:.0f} ms (of which 200 ms is the "
                    "page waiting for typing to pause)"
                )
                page.goto(f"{url}/#/search")
                page_ms, api_ms = [], []
                for n in range(args.searches):
                    query = f"{WORDS[n % len(WORDS)]} {WORDS[(n + 3) % len(WORDS)]}"
                    t0 = time.perf_counter()
                    httpx.post(f"{url}/v1/search", json={"query": query})
                    api_ms.append((time.perf_counter() - t0) * 1000)
                    page.fill("#q", query)
                    t0 = time.perf_counter()
                    page.click("#search button[type=submit]")
                    page.locator(".hit").first.wait_for()
                    page_ms.append((time.perf_counter() - t0) * 1000)
                    page.evaluate("document.getElementById('results').replaceChildren()")
                print(
                    f"search: hits shown after {statistics.median(page_ms):.0f} ms (median), "
                    f"the API alone answers in {statistics.median(api_ms):.0f} ms"
                )
                browser.close()


if __name__ == "__main__":
    main()
