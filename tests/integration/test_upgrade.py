"""An upgrade, end to end, over the embedded SQLite store: documents an older release made
(none of their versions recorded, or older ones — written straight into the store's file as
an older release leaves them) show as stale in ``status --json``; ``lorebase sync`` reads them
all again — folder files, a mail's attachment with its mail, an upload from its stored
original — without a single new embedding of an unchanged chunk text, and none is stale
afterwards; a server re-reads them in the background. A pass says the time it has left: in
``status --json`` while it runs, and in its ``knowledge_base`` events."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from integration.store_backends import StoreBackend
from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.main import app
from lorebase.embed.base import EmbedKind
from lorebase.embed.fake import FakeEmbedder
from lorebase.events import Event, EventBus, EventTransport
from lorebase.ingest.versions import versions_of
from lorebase.service.passes import pacing
from lorebase.settings import ServeSettings, Settings
from waiting import wait_until

runner = CliRunner()
OLDER = "x1.c1.a1"
"""The versions key an older release would have recorded (none records 1 for all three)."""


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, counting the document texts it is asked to embed."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(hook=self._count)
        self.documents: list[str] = []
        self.delay = delay

    def _count(self, texts: Sequence[str], kind: EmbedKind) -> None:
        if kind == "document":
            self.documents.extend(texts)
            time.sleep(self.delay)


def settings(data: Path) -> Settings:
    return Settings(data_dir=data, serve=ServeSettings(workers=1, watch=False, auth=False))


def make(data: Path, embedder: FakeEmbedder | None = None) -> Lorebase:
    return open_lorebase(settings=settings(data), embedder=embedder or CountingEmbedder())


def mail_with(name: str, data: bytes) -> bytes:
    message = EmailMessage()
    message["From"] = "Ann Example <ann@example.org>"
    message["To"] = "team@example.org"
    message["Subject"] = "Lighthouse plans"
    message.set_content("The plans are attached. The keeper retires in spring.\n")
    message.add_attachment(data, maintype="text", subtype="markdown", filename=name)
    return message.as_bytes()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for n in range(4):
        sections = "\n\n".join(
            f"## Part {p}\n\nNote {n} part {p} covers topic{n}x{p} at length." for p in range(3)
        )
        (root / f"note{n}.md").write_text(f"# Note {n}\n\n{sections}\n")
    (root / "plain.txt").write_text("Plain words about submarines and harbours.\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really")  # a failed document is stale too
    attachment = b"# Restoration\n\nThe lighthouse restoration needs 40 volunteers.\n"
    (root / "plans.eml").write_bytes(mail_with("restoration.md", attachment))
    return root


def cli(data: Path, *args: str) -> Any:
    result = runner.invoke(app, ["--data-dir", str(data), "--embedder", "fake", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def status_of(data: Path, kb: str = "notes") -> dict[str, Any]:
    bases = cli(data, "status")["knowledge_bases"]
    found: dict[str, Any] = next(b for b in bases if b["name"] == kb)
    return found


def as_an_older_release_left_them(
    data: Path, versions: str | None, where: str = "1 = 1", params: Sequence[object] = ()
) -> int:
    """Write ``versions`` on the documents ``where`` selects, in the store's SQLite file: what
    an older release left (None: one from before versions were recorded). How many."""
    with contextlib.closing(sqlite3.connect(data / "lorebase.db")) as db, db:
        changed = db.execute(
            f"UPDATE documents SET versions = ? WHERE {where}", [versions, *params]
        ).rowcount
    return changed


def versions_by_path(lb: Lorebase, kb: str = "notes") -> dict[str, str | None]:
    return {d.path: d.versions for d in lb.documents(kb)}


def test_sync_reads_an_older_releases_base_again_without_embedding_again(
    tmp_path: Path, folder: Path
) -> None:
    data = tmp_path / "data"
    added = cli(data, "add", str(folder), "--kb", "notes")
    assert added["failed"] == [["notes/broken.pdf", "corrupt"]]
    before = status_of(data)
    assert before["stale_documents"] == 0 and before["seconds_left"] is None
    documents = before["documents"]
    assert documents == 8  # 4 notes, the text, the failed PDF, the mail and its attachment
    with make(data) as lb:
        searched = lb.search("volunteers lighthouse", kb="notes", top_k=3).hits
    assert as_an_older_release_left_them(data, None) == documents

    stale = status_of(data)
    assert stale["stale_documents"] == documents
    human = runner.invoke(app, ["--data-dir", str(data), "--embedder", "fake", "status"])
    assert f"{documents} documents made by an older version" in human.output

    embedder = CountingEmbedder()
    with make(data, embedder) as lb:
        assert lb.stale_documents() == {lb.kb("notes").id: documents}
        report = lb.sync("notes")["notes"]
        assert embedder.documents == []  # not one chunk text embedded again
        assert (report.embedded, report.reused) == (0, lb.kb("notes").chunks)
        # Every file read again (the PDF fails again), and the mail's attachment with it.
        assert (report.updated, report.unchanged) == (7, 0)
        assert report.failed == [("notes/broken.pdf", "corrupt")]
        found = versions_by_path(lb)
        assert found["notes/note0.md"] == versions_of("md")
        assert found["notes/plain.txt"] == versions_of("txt")
        assert found["notes/broken.pdf"] == versions_of("pdf")
        assert found["notes/plans.eml › restoration.md"] == versions_of("md")
        assert all(v is not None for v in found.values())
        assert lb.stale_documents() == {}
        again = lb.search("volunteers lighthouse", kb="notes", top_k=3).hits
        assert [h.provenance.path for h in again] == [h.provenance.path for h in searched]
    after = status_of(data)
    assert after["stale_documents"] == 0 and after["documents"] == documents
    # Nothing stale, nothing changed: the next sync reads nothing.
    quiet = cli(data, "sync")["notes"]
    assert (quiet["unchanged"], quiet["updated"], quiet["reused"]) == (7, 0, 0)


def test_the_cli_sync_reports_the_vectors_it_reused(tmp_path: Path, folder: Path) -> None:
    data = tmp_path / "data"
    cli(data, "add", str(folder), "--kb", "notes")
    chunks = status_of(data)["chunks"]
    as_an_older_release_left_them(data, OLDER, "kind = ?", ["md"])
    assert status_of(data)["stale_documents"] == 5  # the notes and the attachment
    report = cli(data, "sync")["notes"]
    # Every chunk but the text file's (not stale, not read) found again by content.
    assert (report["embedded"], report["reused"], report["updated"]) == (0, chunks - 1, 6)
    assert status_of(data)["stale_documents"] == 0


def test_a_stale_attachment_is_read_again_with_its_mail(tmp_path: Path, folder: Path) -> None:
    data = tmp_path / "data"
    with make(data) as lb:
        lb.add([folder], kb="notes")
        mail_before = {d.path: d for d in lb.documents("notes")}["notes/plans.eml"]
    part = "notes/plans.eml › restoration.md"
    assert as_an_older_release_left_them(data, OLDER, "path = ?", [part]) == 1
    embedder = CountingEmbedder()
    with make(data, embedder) as lb:
        assert lb.stale_documents() == {lb.kb("notes").id: 1}
        report = lb.sync("notes")["notes"]
        # The mail alone is read again (updated: it and its attachment); the others are not.
        assert (report.updated, report.unchanged) == (2, 6)
        assert embedder.documents == [] and report.reused >= 2
        found = {d.path: d for d in lb.documents("notes")}
        assert found[part].versions == versions_of("md")
        assert found["notes/plans.eml"].id == mail_before.id
        assert lb.stale_documents() == {}
        hit = lb.search("volunteers", kb="notes", mode="keyword").hits[0]
        assert hit.provenance.path == part


def test_a_stale_upload_is_read_again_from_its_original(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with make(data) as lb:
        kb = lb.create_kb("inbox")
        upload, _ = lb.upload(kb, "leave.md", [b"# Leave\n\n## Carry-over\n\nTen days carry.\n"])
        lb.start_serving()
        assert lb.queue.join(30)
        lb.stop_serving()
        indexed = lb.document_in(kb, upload.id)
        assert indexed.state.value == "indexed" and indexed.versions == versions_of("md")
    as_an_older_release_left_them(data, None)
    assert status_of(data, "inbox")["stale_documents"] == 1
    embedder = CountingEmbedder()
    with make(data, embedder) as lb:
        reports = lb.sync()  # every base: this one follows no folder, but holds a stale upload
        assert reports["inbox"].updated == 1 and reports["inbox"].reused >= 1
        assert embedder.documents == []
        again = lb.document_in(lb.kb("inbox"), upload.id)
        assert (again.state.value, again.versions) == ("indexed", versions_of("md"))
        assert lb.stale_documents() == {}
        assert lb.search("carry", kb="inbox", mode="keyword").hits


def test_a_server_reads_stale_documents_again_in_the_background(
    tmp_path: Path, folder: Path
) -> None:
    data = tmp_path / "data"
    with make(data) as lb:
        lb.add([folder], kb="notes")
        kb = lb.create_kb("inbox")
        upload, _ = lb.upload(kb, "leave.md", [b"# Leave\n\nTen days carry over.\n"])
        lb.start_serving()
        assert lb.queue.join(30)
        lb.stop_serving()
    stale = as_an_older_release_left_them(data, None)
    assert stale == 9
    embedder = CountingEmbedder()
    with make(data, embedder) as lb:
        assert sum(lb.stale_documents().values()) == stale
        lb.start_serving()  # no folder watcher here: only the queue's sweep re-reads them
        try:
            wait_until(
                lambda: lb.stale_documents() == {}, 60, what=lambda: str(lb.stale_documents())
            )
        finally:
            lb.stop_serving()
        assert embedder.documents == []
        assert lb.document_in(lb.kb("inbox"), upload.id).versions == versions_of("md")
        assert all(v is not None for v in versions_by_path(lb).values())


class Recording(EventTransport):
    """Events as they are published, kept in order."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[Event] = []

    def send(self, event: Event) -> None:
        self.sent.append(event)
        self.receive(event)


@pytest.fixture
def many_notes(tmp_path: Path) -> Path:
    root = tmp_path / "many"
    root.mkdir()
    for n in range(24):
        (root / f"n{n:02}.md").write_text(f"# Note {n}\n\nThe note {n} talks of item{n}.\n")
    return root


def test_a_pass_says_its_time_left_in_status_and_events(tmp_path: Path, many_notes: Path) -> None:
    data = tmp_path / "data"
    with make(data) as lb:
        lb.create_kb("many", sources=[many_notes])
    slow = CountingEmbedder(delay=0.25)  # a chunk each call: about 6 s for 24
    recording = Recording()
    with make(data, slow) as lb:
        lb.ingestor.batch_chunks = 1
        lb.syncer.on_pace = pacing(EventBus(transport=recording))
        kb_id = lb.kb("many").id
        done = threading.Event()

        def run_pass() -> None:
            lb.sync("many")
            done.set()

        def told() -> dict[str, Any] | None:
            found = status_of(data, "many")
            return found if found["seconds_left"] is not None else None

        pass_thread = threading.Thread(target=run_pass)
        pass_thread.start()
        try:
            measured = wait_until(told, 30, what="a time left in status --json during a pass")
            assert measured is not None
            assert measured["state"] == "indexing" and measured["seconds_left"] >= 0
            assert measured["progress_total"] == 24
            assert 0 <= measured["progress_done"] <= 24
            assert kb_id in lb.seconds_left()
        finally:
            pass_thread.join(60)
        assert done.is_set()
    paced = [e for e in recording.sent if e["type"] == "knowledge_base"]
    assert paced and all(e["knowledge_base_id"] == kb_id for e in paced)
    assert all(e["state"] == "indexing" and e["progress_total"] == 24 for e in paced)
    lefts = [e["seconds_left"] for e in paced]
    assert lefts[0] is None  # no rate yet at first
    timed = [left for left in lefts if left is not None]
    assert timed and all(isinstance(left, float) and left >= 0 for left in timed)
    after = status_of(data, "many")
    assert after["state"] == "ready" and after["seconds_left"] is None


def test_status_and_the_api_agree_on_them(tmp_path: Path, folder: Path) -> None:
    """The REST body says what ``status --json`` says."""
    data = tmp_path / "data"
    cli(data, "add", str(folder), "--kb", "notes")
    as_an_older_release_left_them(data, OLDER, "kind = ?", ["txt"])
    with make(data) as lb:
        client = api_client(create_app(lb, manage=False))
        listed = client.get("/v1/knowledge-bases").json()
        (notes,) = [b for b in listed if b["name"] == "notes"]
        assert (notes["stale_documents"], notes["seconds_left"]) == (1, None)
        one = client.get(f"/v1/knowledge-bases/{notes['id']}").json()
        assert one["stale_documents"] == 1
        metrics = client.get("/metrics")  # a server without keys: the local administrator
        assert metrics.status_code == 200, metrics.text
        assert f'lorebase_stale_documents{{kb="{notes["id"]}"}} 1.0' in metrics.text
        assert "lorebase_pass_seconds_left{" not in metrics.text  # no pass runs
    assert status_of(data)["stale_documents"] == 1


def test_sync_reads_stale_documents_again_on_either_store(
    tmp_path: Path, folder: Path, backend: StoreBackend
) -> None:
    """The same upgrade over PostgreSQL as over SQLite: stale documents (versions written past
    lorebase, in each store's own SQL) read again, nothing embedded again."""
    data = tmp_path / "data"
    key = backend.data_key()

    def opened(embedder: FakeEmbedder) -> Lorebase:
        return open_lorebase(settings=backend.settings(data), embedder=embedder, data_key=key)

    with opened(CountingEmbedder()) as lb:
        lb.add([folder], kb="notes")
        documents = lb.kb("notes", totals=True).documents
        assert lb.stale_documents() == {}
    if backend.postgres:
        backend.rows(data, "UPDATE documents SET versions = NULL RETURNING id")
    else:
        as_an_older_release_left_them(data, None)
    embedder = CountingEmbedder()
    with opened(embedder) as lb:
        assert lb.stale_documents() == {lb.kb("notes").id: documents}
        report = lb.sync("notes")["notes"]
        assert embedder.documents == [] and report.embedded == 0
        assert report.reused == lb.kb("notes", totals=True).chunks
        assert lb.stale_documents() == {}
        assert lb.search("volunteers", kb="notes", mode="keyword").hits
