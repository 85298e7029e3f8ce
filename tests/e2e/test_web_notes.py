"""The page writes notes into a base: saved, listed, found by a search at once, edited (the
earlier text shown as a version) and deleted; a refusal (too long, not allowed) is said."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, expect, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page


pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_a_note_written_on_the_page_is_searchable_and_keeps_its_versions(
    page: Page, server: Server
) -> None:
    kb_id: int = api(server, "bob", "POST", "/v1/knowledge-bases", json={"name": "desk"}).json()[
        "id"
    ]
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator("#notes-card summary").click()
    page.fill("#note-title", "Lab door")
    page.fill("#note-text", "The heron lab door code is 4711.")
    page.click("#note-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("searchable now")
    note = page.locator('#notes li[data-state="indexed"]')
    expect(note).to_have_count(1)
    assert note.locator("a").inner_text() == "Lab door"
    hits = api(
        server, "bob", "POST", "/v1/search", json={"query": "4711", "mode": "keyword"}
    ).json()["hits"]
    assert [hit["title"] for hit in hits] == ["Lab door"]

    note.get_by_role("button", name="Edit").click()
    expect(page.locator("#note-text")).to_have_value("The heron lab door code is 4711.")
    page.fill("#note-text", "The heron lab door code is 9090.")
    page.click("#note-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("kept as a version")
    page.locator("#notes li").get_by_role("button", name="Versions").click()
    expect(page.locator("#note-versions")).to_contain_text("The heron lab door code is 4711.")
    expect(page.locator("#note-versions")).to_contain_text("replaced by bob")

    # Too long: the server's limit is said, and nothing is saved.
    limit = server.lb.settings.max_note_chars
    page.fill("#note-title", "")
    page.fill("#note-text", "x" * (limit + 1))
    page.click("#note-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text(f"at most {limit} characters")
    expect(page.locator("#notes li")).to_have_count(1)

    page.locator("#notes li").get_by_role("button", name="Delete note Lab door").click()
    expect(page.locator("#flash")).to_contain_text("Deleted the note")
    expect(page.locator("#notes")).to_contain_text("No notes yet.")


def test_a_member_who_may_only_read_is_told_so(page: Page, server: Server) -> None:
    kb_id: int = api(
        server,
        "alice",
        "POST",
        "/v1/knowledge-bases",
        json={"name": "red-notes", "scope": "team", "team": "red"},
    ).json()["id"]
    api(
        server,
        "alice",
        "POST",
        f"/v1/knowledge-bases/{kb_id}/notes",
        json={"text": "Standup at ten."},
    )
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/#/kb/{kb_id}")
    page.locator("#notes-card summary").click()
    expect(page.locator("#notes li")).to_have_count(1)
    page.fill("#note-text", "Standup at eleven.")
    page.click("#note-form button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("may read this knowledge base but not change it")
