"""The web page in a real browser: sign in, bases, uploads reaching `indexed` live, search,
a hit opened at its passage, deletes; scopes; hostile names and text rendered inert."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

REPO = Path(__file__).resolve().parents[2]
# Set to write the README's screenshot of the search view (docs/web-search.png).
SCREENSHOT_ENV = "LOREBASE_WEB_SCREENSHOT"

NOTES = {
    "heron.md": "# Herons\n\n## Feeding\n\nThe grey heron hunts fish in shallow water at dawn.\n",
    "kestrel.txt": "Kestrels hover over fields and dive on voles and beetles.\n",
}
DROPPED = ("owl.md", "# Owls\n\nBarn owls hunt voles by sound in complete darkness.\n")
BROKEN = "broken.pdf"  # bytes that are not a PDF: indexing fails, with a reason


def drop_files(page: Page, target: str, files: list[tuple[str, str]]) -> None:
    """Drop files on an element as a user dragging them from the desktop would."""
    page.evaluate(
        """([selector, files]) => {
            const data = new DataTransfer();
            for (const [name, text] of files) data.items.add(new File([text], name));
            const target = document.querySelector(selector);
            for (const type of ["dragover", "drop"]) {
                target.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true,
                                                          cancelable: true}));
            }
        }""",
        [target, files],
    )


def test_a_base_from_creation_to_deletion(page: Page, server: Server, tmp_path: Path) -> None:
    sign_in(page, server, "alice")
    loads = []
    page.on("load", lambda _: loads.append(1))

    # Create a base.
    page.fill("#kb-name", "birds")
    page.fill("#kb-description", "field notes")
    page.click("#create-kb button[type=submit]")
    page.click("table#bases a:text-is('birds')")
    page.wait_for_selector("table#documents")

    # Upload by the file chooser (two notes and a broken file), then by dropping one.
    paths = []
    for name, text in NOTES.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    (tmp_path / BROKEN).write_bytes(b"%PDF-1.7 this is not a pdf")
    (tmp_path / "photo.xyz").write_bytes(b"not a document")  # refused at once: nothing stored
    page.set_input_files(
        "#upload-files", [*paths, str(tmp_path / BROKEN), str(tmp_path / "photo.xyz")]
    )
    drop_files(page, "#documents", [DROPPED])
    outcomes = page.locator("#uploads li[data-outcome]")
    outcomes.nth(4).wait_for()
    assert page.locator("#uploads li[data-outcome=accepted]").count() == 4
    refused = page.locator("#uploads li[data-outcome=refused]").inner_text()
    assert "photo.xyz" in refused and "not supported" in refused

    # They reach `indexed` (and the broken one `failed`, with its reason in words) live.
    rows = page.locator("#documents tr[data-doc]")
    page.locator('#documents tr[data-state="indexed"]').nth(2).wait_for()
    failed = page.locator('#documents tr[data-state="failed"]')
    failed.wait_for()
    assert rows.count() == 4
    reason = failed.locator("td.reason").inner_text()
    assert len(reason) > 20 and "_" not in reason, reason  # words, not a code
    assert loads == [], "the page reloaded"

    # Search the base; each hit has its citation, a marked snippet, its base.
    page.click("a:text('Search this base')")
    page.fill("#q", "heron fish")
    page.click("#search button[type=submit]")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert "heron.md" in hit.locator(".citation").inner_text()
    assert [m.lower() for m in hit.locator("mark").all_inner_texts()][:1] in (["heron"], ["fish"])
    assert "in birds" in hit.inner_text()
    hit.locator("button:text('scores')").click()
    assert hit.locator("dl.scores").is_visible()
    if os.environ.get(SCREENSHOT_ENV):
        page.screenshot(path=str(REPO / "docs" / "web-search.png"), full_page=True)

    # Open the hit at its passage, with the neighbouring chunks and the text.
    hit.locator(".citation").click()
    page.wait_for_selector("#passage")
    assert "grey heron" in page.locator("#passage").inner_text()
    assert page.locator("ol.text li.in-passage").count() >= 1

    # Open a document from its base's table: without a passage, its first chunks and its text.
    page.click("a:text('the base')")
    page.locator("#documents tr[data-doc] a", has_text="heron.md").click()
    page.locator("h2", has_text="Its chunks").wait_for()
    assert "grey heron" in page.locator("ol.chunks").inner_text()
    page.click("a:text('the base')")

    # Delete a document.
    row = page.locator("#documents tr[data-doc]", has_text="kestrel.txt")
    row.locator("button:text('Delete…')").click()
    row.locator("button:text('Delete for good')").click()
    page.locator("#documents tr[data-doc]", has_text="kestrel.txt").wait_for(state="detached")
    assert rows.count() == 3

    # Delete the base: the confirmation says what goes.
    page.click("a:text('Knowledge bases')")
    base = page.locator("table#bases tr[data-kb]", has_text="birds")
    base.locator("button:text('Delete…')").click()
    assert "3 documents" in base.locator(".confirm").inner_text()
    base.locator("button:text('Delete for good')").click()
    base.wait_for(state="detached")
    assert server.lb.knowledge_bases() == []


def test_nobody_sees_another_users_or_teams_base(page: Page, server: Server) -> None:
    made = {
        "alice-diary": ("alice", {"scope": "personal"}),
        "red-plans": ("alice", {"scope": "team", "team": "red"}),
        "blue-plans": ("carol", {"scope": "team", "team": "blue"}),
        "handbook": ("admin", {"scope": "global"}),
    }
    for name, (user, body) in made.items():
        answer = api(server, user, "POST", "/v1/knowledge-bases", json={"name": name} | body)
        assert answer.status_code == 201, answer.text
    sign_in(page, server, "bob")
    for view in ("#/bases", "#/search", "#/ask"):
        page.goto(server.url + "/" + view)
        page.wait_for_selector("main h1")
        page.wait_for_load_state("networkidle")
        text = page.content()
        assert "red-plans" in text and "handbook" in text, view
        assert "alice-diary" not in text and "blue-plans" not in text, view


HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"
HOSTILE_TEXT = (
    "# <script>alert('heading')</script> Heading\n\n"
    'Hostile <img src=x onerror="alert(2)"> text about heron <b>bold</b>.\n'
)
# Plain text keeps its markup characters verbatim in the extracted text and the chunks.
HOSTILE_PLAIN = ("notes <b>.txt", "<script>alert(4)</script> heron <img src=x onerror=alert(5)>\n")


def test_hostile_names_and_text_render_as_text(page: Page, server: Server) -> None:
    answer = api(
        server,
        "alice",
        "POST",
        "/v1/knowledge-bases",
        json={"name": "<svg onload=alert(3)>", "scope": "personal"},
    )
    kb_id = answer.json()["id"]
    for name, text in ((HOSTILE_NAME, HOSTILE_TEXT), HOSTILE_PLAIN):
        files = {"files": (name, text.encode(), "text/plain")}
        upload = api(server, "alice", "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
        assert upload.status_code == 202, upload.text
    sign_in(page, server, "alice")
    page.locator("table#bases a", has_text="<svg onload=alert(3)>").wait_for()
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator('#documents tr[data-state="indexed"]').nth(1).wait_for()
    assert page.locator("#documents a", has_text=HOSTILE_NAME).count() == 1
    page.goto(f"{server.url}/#/search?q=heron%20hostile&kb={kb_id}")
    hits = page.locator(".hit")
    hits.nth(1).wait_for()
    assert HOSTILE_NAME in hits.all_inner_texts()[0] + hits.all_inner_texts()[1]
    plain = page.locator(".hit", has_text=HOSTILE_PLAIN[0])
    assert "<script>alert(4)</script>" in plain.inner_text()
    plain.locator(".citation").click()
    page.wait_for_selector("#passage")
    assert "<img src=x onerror=alert(5)>" in page.locator("#passage").inner_text()
    assert "<script>alert(4)</script>" in page.locator("ol.text").inner_text()
    injected = page.evaluate(
        "document.querySelectorAll('main img, main script, main svg, main b, header img').length"
    )
    assert injected == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # app.js only


def test_a_base_is_edited_and_an_admin_follows_a_folder(
    page: Page, server: Server, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "wren.md").write_text("# Wrens\n\nWrens sing loudly for their size.\n")
    body = {"name": "shared", "scope": "global"}
    made = api(server, "admin", "POST", "/v1/knowledge-bases", json=body)
    kb_id = made.json()["id"]
    sign_in(page, server, "admin")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.click("summary:text('Settings and folders')")
    page.fill("#edit-description", "birds we share")
    page.fill("#edit-chunk", "800")
    page.click("#edit-kb button[type=submit]")
    page.locator("main p", has_text="birds we share").wait_for()
    assert server.lb.kb_by_id(kb_id).chunk_settings.chunk_size == 800
    page.click("summary:text('Settings and folders')")
    page.fill("#source-path", str(folder))
    page.click("#add-source button[type=submit]")
    page.locator("#sources code", has_text=str(folder)).wait_for(state="attached")
    page.click("summary:text('Settings and folders')")
    page.click("button:text('Sync now')")
    page.locator('#documents tr[data-state="indexed"]', has_text="wren.md").wait_for(timeout=20_000)


def test_search_warnings_are_shown(page: Page, server: Server) -> None:
    kb_id = api(server, "bob", "POST", "/v1/knowledge-bases", json={"name": "b"}).json()["id"]
    files = {"files": ("heron.md", NOTES["heron.md"].encode(), "text/markdown")}
    api(server, "bob", "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator('#documents tr[data-state="indexed"]').wait_for()
    page.goto(f"{server.url}/#/search")
    page.fill("#q", "heron")
    page.check("#search-rerank")  # no reranker is configured on this server
    page.click("#search button[type=submit]")
    page.locator(".hit").first.wait_for()
    assert "no reranker is configured" in page.locator(".warning").inner_text()
    # At phone width nothing runs off the side of the screen (wide tables scroll in place).
    page.set_viewport_size({"width": 390, "height": 800})
    for view in ("#/search?q=heron", f"#/kb/{kb_id}", "#/bases", "#/status", "#/ask"):
        page.goto(f"{server.url}/{view}")
        page.wait_for_selector("main h1")
        page.wait_for_load_state("networkidle")
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (view, width)


def test_a_hit_opens_its_documents_other_passages(page: Page, server: Server) -> None:
    """One hit per document; "N more passages in this document" opens the others, each a
    link to the document at that passage."""
    kb_id = api(server, "bob", "POST", "/v1/knowledge-bases", json={"name": "ice"}).json()["id"]
    parts = "\n\n".join(
        f"## Valley {n}\n\n" + f"The glacier in valley {n} melts into the river. " * 30
        for n in range(5)
    )
    files = {"files": ("glaciers.md", f"# Glaciers\n\n{parts}\n".encode(), "text/markdown")}
    api(server, "bob", "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator('#documents tr[data-state="indexed"]').wait_for()
    page.goto(f"{server.url}/#/search?q=glacier%20melts%20river&kb={kb_id}")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert page.locator("ol.hits > li.hit").count() == 1  # the document once
    more = hit.locator("details.passages")
    summary = more.locator("summary").inner_text()
    assert summary.endswith("more passages in this document"), summary
    assert not more.locator("li.passage").first.is_visible()  # closed until asked
    more.locator("summary").click()
    passage = more.locator("li.passage").first
    assert passage.is_visible() and "Valley" in passage.locator(".citation").inner_text()
    assert passage.locator("mark").count() >= 1  # the question's words marked
    passage.locator(".citation").click()
    page.wait_for_selector("#passage")
    assert "glacier in valley" in page.locator("#passage").inner_text()
