"""The page's filters and the passage on its page: filter chips narrow a search (a hit's tag
adds one), hits show their document's tags, author and date, the document view shows what is
known of it, takes tags of one's own, and shows a PDF's page with the passage marked, page by
page; at phone width nothing runs off the screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, expect, sign_in
from unit.fixtures_office import text_pdf

if TYPE_CHECKING:
    from playwright.sync_api import Page


pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

POLICY = (
    "---\ntags: [policy, travel]\nauthor: Ann Lee\ndate: 2025-03-04\n---\n\n"
    "# Travel policy\n\nHeron watchers travel by train to the coast.\n"
)
NOTES = "---\ntags: [notes]\n---\n\n# Notes\n\nHeron watchers met at the coast.\n"
PAGES = [
    ["Heron watchers keep a list of the birds they saw."],
    ["The heron census is sent to the society every spring."],
]


def _base(page: Page, server: Server) -> int:
    kb_id: int = api(server, "bob", "POST", "/v1/knowledge-bases", json={"name": "birds"}).json()[
        "id"
    ]
    files = [
        ("files", ("policy.md", POLICY.encode(), "text/markdown")),
        ("files", ("notes.md", NOTES.encode(), "text/markdown")),
        ("files", ("census.pdf", text_pdf(PAGES), "application/pdf")),
    ]
    api(server, "bob", "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator('#documents tr[data-state="indexed"]').nth(2).wait_for()
    return kb_id


def test_filter_chips_narrow_the_search_and_the_document_takes_tags(
    page: Page, server: Server
) -> None:
    kb_id = _base(page, server)
    page.goto(f"{server.url}/#/search?q=heron%20watchers%20coast&kb={kb_id}")
    page.locator(".hit").first.wait_for()
    assert page.locator("ol.hits > li.hit").count() >= 2
    page.fill("#search-filter", "tags=policy")
    page.keyboard.press("Enter")
    assert page.locator(".chips .chip").inner_text().startswith("tags=policy")
    page.click("#search button[type=submit]")
    expect(page.locator("ol.hits > li.hit")).to_have_count(1)
    hit = page.locator(".hit").first
    assert "policy.md" in hit.locator(".citation").inner_text()
    assert "author: Ann Lee" in hit.locator(".fields").inner_text()
    assert "date: 2025-03-04" in hit.locator(".fields").inner_text()
    # The chip is kept in the address: a reload searches with it again.
    assert "f=tags%3Dpolicy" in page.url

    page.locator(".chips button").click()  # removed
    page.click("#search button[type=submit]")
    expect(page.locator("ol.hits > li.hit")).to_have_count(3)
    page.locator(".hit button.tag", has_text="notes").click()  # a hit's tag adds a chip
    expect(page.locator("ol.hits > li.hit")).to_have_count(1)
    assert "notes.md" in page.locator(".hit .citation").inner_text()

    page.locator(".hit .citation").first.click()
    page.locator(".fields-list").wait_for()
    page.fill(".tag-form input", "Spring count")
    page.click(".tag-form button")
    page.locator(".fields-list .chip", has_text="Spring count").wait_for()
    found = api(
        server,
        "bob",
        "POST",
        "/v1/search",
        json={"query": "heron", "filter": {"tags": "spring count"}},
    )
    assert [hit["path"] for hit in found.json()["hits"]] == ["notes.md"]
    page.locator('.fields-list button[aria-label="remove tag Spring count"]').click()
    expect(page.locator(".fields-list")).not_to_contain_text("Spring count")

    page.goto(f"{server.url}/#/search?q=heron&kb={kb_id}")
    page.locator(".hit").first.wait_for()
    page.fill("#search-filter", "colour=red")
    page.click("#search button[type=submit]")
    page.locator(".flash.error, .error").first.wait_for()
    assert "fields known here" in page.locator(".flash.error, .error").first.inner_text()


def test_a_pdf_passage_is_shown_marked_on_its_page(page: Page, server: Server) -> None:
    kb_id = _base(page, server)
    page.goto(f"{server.url}/#/search?q=heron%20census%20society&kb={kb_id}")
    hit = page.locator(".hit", has_text="census.pdf").first
    hit.wait_for()
    hit.locator(".citation").click()
    image = page.locator("img.page-image")
    image.wait_for()
    caption = page.locator("section.page p.muted")
    expect(caption).to_contain_text("the passage is marked")
    assert image.evaluate("img => img.decode().then(() => img.naturalWidth)") >= 200
    first = caption.inner_text()
    other = "next page →" if first.startswith("Page 1") else "← previous page"
    page.get_by_role("button", name=other).click()
    expect(caption).not_to_have_text(first)
    expect(caption).to_contain_text("of 2")  # after "Loading page N…"

    page.set_viewport_size({"width": 390, "height": 800})
    page.reload()
    page.locator("img.page-image").wait_for()
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
    page.goto(f"{server.url}/#/search?q=heron&kb={kb_id}&f=tags%3Dpolicy")
    page.locator(".hit").first.wait_for()
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def test_a_document_previews_other_chunk_settings(page: Page, server: Server) -> None:
    kb_id = _base(page, server)
    documents = api(server, "bob", "GET", f"/v1/knowledge-bases/{kb_id}/documents").json()
    policy = next(d for d in documents if d["name"] == "policy.md")
    page.goto(f"{server.url}/#/doc/{policy['id']}")
    page.locator("details.card summary", has_text="Preview other chunk settings").click()
    page.fill("#rechunk-size", "200")
    page.fill("#rechunk-overlap", "0")
    page.get_by_role("button", name="Preview").click()
    outcome = page.locator(".rechunk-outcome")
    expect(outcome).to_contain_text("nothing is stored")
    page.fill("#rechunk-size", "400")  # overlap over half the size: the server says so
    page.fill("#rechunk-overlap", "300")
    page.get_by_role("button", name="Preview").click()
    expect(outcome.locator(".error")).to_contain_text("overlap")
    page.set_viewport_size({"width": 390, "height": 800})
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
