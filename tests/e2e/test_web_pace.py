"""The bases view in a real browser says what ``lorebase status`` says: a running pass's
files done and time left, and the documents an older version made (stale)."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING

import pytest

from e2e.browsing import Server, api, sign_in
from lorebase.store.states import KbState
from waiting import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.e2e, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def test_the_bases_view_shows_the_time_left_and_the_stale_documents(
    page: Page, server: Server
) -> None:
    lb = server.lb
    kb_id = api(server, "alice", "POST", "/v1/knowledge-bases", json={"name": "herons"}).json()[
        "id"
    ]
    files = {"files": ("heron.md", b"# Herons\n\nThe grey heron hunts at dawn.\n", "text/markdown")}
    uploaded = api(server, "alice", "POST", f"/v1/knowledge-bases/{kb_id}/documents", files=files)
    (upload_id,) = [d["id"] for d in uploaded.json()["documents"]]
    wait_until(lambda: lb.document_in(lb.kb_by_id(kb_id), upload_id).state.value == "indexed")
    # Made by an older release, and its original gone: the server cannot read it again, so it
    # stays stale for the page to show.
    lb.blobs.delete(upload_id)
    with contextlib.closing(sqlite3.connect(lb.settings.database)) as db, db:
        db.execute("UPDATE documents SET versions = NULL WHERE id = ?", [upload_id])
    # A pass under way, as it records its pace: 3 of 10 files, 370 chunks left at 2 a second.
    lb.store.set_kb_state(kb_id, KbState.INDEXING, started=True)
    lb.store.set_kb_progress(kb_id, 3, 10, rate=2.0, left=370)

    sign_in(page, server, "alice")
    row = page.locator(f'table#bases tr[data-kb="{kb_id}"]')
    row.locator(".pace").wait_for()
    assert row.locator(".pace").inner_text() == "3/10 files · about 3 min 05 s left"
    assert "1 made by an older version" in row.locator(".stale").inner_text()
    body = api(server, "alice", "GET", f"/v1/knowledge-bases/{kb_id}").json()
    assert (body["seconds_left"], body["stale_documents"]) == (185.0, 1)

    # Still measuring its rate: the page says so.
    lb.store.set_kb_progress(kb_id, 4, 10, rate=None, left=300)
    page.reload()
    row.locator(".pace").wait_for()
    assert row.locator(".pace").inner_text() == "4/10 files · estimating time left"
