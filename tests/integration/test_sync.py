"""Knowledge bases that follow folders: passes, life cycle, recovery, the ingestion lock — over
the embedded SQLite store and over PostgreSQL."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.base import EmbedKind
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import Conflict, InvalidInput, Unavailable
from lorebase.lock import IngestLock
from lorebase.search.floor import NO_FLOOR
from lorebase.settings import ChunkSettings, ExtractSettings, Settings
from lorebase.store.states import DocumentState, KbState
from lorebase.vault.keys import DataKey
from waiting import wait_until

DATA_KEY = DataKey.generate().to_base64()
_STORE: dict[str, str | None] = {"url": None}


@pytest.fixture(autouse=True, params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test on both stores: folders are followed from the machine that has them,
    whether the knowledge bases live in the embedded SQLite file or in PostgreSQL."""
    _STORE["url"] = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    yield request.param
    _STORE["url"] = None


def settings(data: Path, **options: Any) -> Settings:
    url = _STORE["url"]
    if url is None:
        return Settings(data_dir=data, **options)
    return Settings(data_dir=data, store_url=url, data_key=DATA_KEY, **options)


def make(data: Path, embedder: FakeEmbedder | None = None) -> Lorebase:
    return open_lorebase(settings=settings(data), embedder=embedder or FakeEmbedder())


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    for n in range(5):
        write(root / f"note{n}.md", f"# Note {n}\n\nThe topic of note {n} is item{n}.\n")
    write(root / "sub" / "deep.txt", "A deeper file about submarines.\n")
    return root


def paths(lb: Lorebase, kb: str = "notes") -> dict[str, str]:
    return {d.path: d.state.value for d in lb.documents(kb)}


def test_a_folder_added_becomes_a_source_that_sync_follows(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data") as lb:
        first = lb.add([folder], kb="notes")
        assert first.added == 6
        assert [s.path for s in lb.sources("notes")] == [str(folder)]
        write(folder / "new.md", "# New\n\nFresh content.\n")
        write(folder / "note1.md", "# Note 1\n\nRewritten entirely.\n")
        (folder / "note2.md").unlink()
        report = lb.sync("notes")["notes"]
        assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 4)
        assert "notes/note2.md" not in paths(lb)
        assert (
            lb.search("Rewritten", kb="notes", mode="keyword").hits[0].provenance.path
            == "notes/note1.md"
        )
        assert lb.search("item2", kb="notes", mode="keyword").hits == []
        kb = lb.kb("notes")
        assert kb.state is KbState.READY and kb.pass_finished_at is not None


def test_unchanged_files_are_not_read(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        target = folder / "note3.md"
        stat = target.stat()
        # Same size and mtime, different bytes: a pass that does not read it cannot notice.
        target.write_text(target.read_text().replace("item3", "itemX"))
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert lb.sync("notes")["notes"].unchanged == 6
        assert lb.search("item3", kb="notes", mode="keyword").hits
        # --full reads every file and finds it.
        assert lb.sync("notes", full=True)["notes"].updated == 1


def test_a_file_touched_without_change_is_not_processed_again(tmp_path: Path, folder: Path) -> None:
    embedder = FakeEmbedder()
    with make(tmp_path / "data", embedder) as lb:
        lb.add([folder], kb="notes")
        before = embedder.texts_embedded
        os.utime(folder / "note0.md", (1_000_000, 1_000_000))
        report = lb.sync("notes")["notes"]
        assert (report.unchanged, report.updated) == (6, 0)
        assert embedder.texts_embedded == before
        doc = next(d for d in lb.documents("notes") if d.path == "notes/note0.md")
        assert doc.mtime == 1_000_000  # remembered: the next pass will not even hash it


def test_a_moved_or_renamed_file_reuses_its_vectors(tmp_path: Path, folder: Path) -> None:
    """The old document goes after the pass, so its vectors are still there to be found by
    content when the file turns up under its new name."""
    embedder = FakeEmbedder()
    with make(tmp_path / "data", embedder) as lb:
        lb.add([folder], kb="notes")
        before = embedder.texts_embedded
        (folder / "note1.md").rename(folder / "sub" / "renamed.md")
        report = lb.sync("notes")["notes"]
        assert (report.added, report.removed, report.embedded) == (1, 1, 0)
        assert embedder.texts_embedded == before
        paths = {d.path for d in lb.documents("notes")}
        assert "notes/sub/renamed.md" in paths and "notes/note1.md" not in paths
        assert lb.search("item1", kb="notes", mode="dense").hits


def test_a_pass_may_leave_large_new_files_for_the_next(tmp_path: Path, folder: Path) -> None:
    """`add --defer-over-kb`, a quick first look at a big folder: the large files the base does
    not hold yet wait (they are not "gone"), the base says so, and a pass without the limit
    reads only them; a large file the base holds is kept up to date."""
    write(folder / "big.txt", "A long story about whales.\n" * 100)
    embedder = FakeEmbedder()
    with make(tmp_path / "data", embedder) as lb:
        first = lb.add([folder], kb="notes", defer_larger_than=1024)
        assert (first.files, first.added) == (6, 6) and paths(lb)["notes/big.txt"] == "pending"
        assert lb.kb("notes").pending == 1  # status counts it
        base = lb.kb("notes")
        assert base.state is KbState.PENDING
        assert base.state_reason == (
            "1 file over 1 KB is left for the next pass: `lorebase sync` reads it"
        )
        again = lb.add([folder], kb="notes", defer_larger_than=1024)
        assert (again.unchanged, again.added, again.removed) == (6, 0, 0)
        # Another command's pass does not forget it: still pending, still counted.
        lb.add([write(tmp_path / "extra.md", "# Extra\n\nOne more note.\n")], kb="notes")
        assert paths(lb)["notes/big.txt"] == "pending" and lb.kb("notes").pending == 1
        before = embedder.texts_embedded
        rest = lb.sync("notes")["notes"]
        assert (rest.added, rest.unchanged, rest.removed) == (1, 7, 0)
        assert embedder.texts_embedded - before == rest.embedded > 0
        assert paths(lb)["notes/big.txt"] == "indexed"
        assert lb.kb("notes").state is KbState.READY
        write(folder / "big.txt", "A long story about squids.\n" * 100)
        assert lb.add([folder], kb="notes", defer_larger_than=1024).updated == 1
        assert lb.kb("notes").state is KbState.READY
        assert lb.search("squids", kb="notes", mode="keyword").hits


def test_failed_files_are_not_retried_until_they_change(tmp_path: Path, folder: Path) -> None:
    broken = folder / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 nothing here")
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        assert paths(lb)["notes/broken.pdf"] == "failed"
        os.utime(broken, (5, 5))
        again = lb.sync("notes")["notes"]
        assert again.failed == [] and again.unchanged == 7
        broken.write_bytes(b"%PDF-1.4 still broken, differently")
        assert lb.sync("notes")["notes"].failed == [("notes/broken.pdf", "corrupt")]


def test_sources_may_not_overlap_and_are_bounded(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data") as lb:
        lb.create_kb("notes", sources=[folder])
        with pytest.raises(Conflict):
            lb.add_source("notes", folder / "sub")
        with pytest.raises(Conflict):
            lb.add_source("notes", folder.parent)
        with pytest.raises(Conflict):
            lb.add_source("notes", folder)
        with pytest.raises(InvalidInput):
            lb.add_source("notes", folder / "note0.md")
        for n in range(15):
            (tmp_path / f"extra{n}").mkdir()
            lb.add_source("notes", tmp_path / f"extra{n}")
        (tmp_path / "one-too-many").mkdir()
        with pytest.raises(InvalidInput):
            lb.add_source("notes", tmp_path / "one-too-many")


def test_removing_a_source_drops_its_documents(tmp_path: Path, folder: Path) -> None:
    other = tmp_path / "other"
    write(other / "x.md", "# X\n\nOther folder.\n")
    with make(tmp_path / "data") as lb:
        lb.add([folder, other], kb="notes")
        assert lb.remove_source("notes", "other") == 1
        assert all(p.startswith("notes/") for p in paths(lb))


def test_a_missing_folder_keeps_its_documents_and_the_base_waits(
    tmp_path: Path, folder: Path
) -> None:
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        folder.rename(tmp_path / "moved")
        lb.sync("notes")
        assert len(paths(lb)) == 6
        kb = lb.kb("notes")
        assert kb.state is KbState.WAITING and "source_unavailable" in (kb.state_reason or "")
        (tmp_path / "moved").rename(folder)
        lb.sync("notes")
        assert lb.kb("notes").state is KbState.READY


def test_embedder_down_makes_the_base_wait_and_the_next_pass_resumes(
    tmp_path: Path, folder: Path
) -> None:
    calls = {"n": 0}

    def flaky(texts: Sequence[str], kind: EmbedKind) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise Unavailable("embedding server did not answer")

    with make(tmp_path / "data", FakeEmbedder(hook=flaky)) as lb:
        lb.ingestor.batch_chunks = 2  # several embedding calls in one pass
        report = lb.add([folder], kb="notes")
        assert report.stopped and "did not answer" in report.stopped
        kb = lb.kb("notes")
        assert kb.state is KbState.WAITING and kb.state_reason is not None
        assert kb.state_reason.startswith("embedder_unavailable")
        done = {p for p, s in paths(lb).items() if s == "indexed"}
        assert 0 < len(done) < 6
        assert all(s in ("indexed", "pending") for s in paths(lb).values())
        assert lb.search("note", kb="notes").hits  # searches answer meanwhile
    embedder = FakeEmbedder()
    with make(tmp_path / "data", embedder) as lb:
        report = lb.sync("notes")["notes"]
        assert report.unchanged == len(done) and report.added == 6 - len(done)
        assert lb.kb("notes").state is KbState.READY


def test_a_new_model_replaces_vectors_without_ever_mixing(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data", FakeEmbedder(model="model-a")) as lb:
        lb.add([folder], kb="notes")
        old_key = lb.kb("notes").identity_key

    calls = {"n": 0}

    def fails_later(texts: Sequence[str], kind: EmbedKind) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise Unavailable("model-b went away")

    with make(tmp_path / "data", FakeEmbedder(model="model-b", hook=fails_later)) as lb:
        lb.ingestor.batch_chunks = 2
        assert lb.sync("notes")["notes"].stopped
        # Half converted: the base still answers from model-a, with every document.
        assert lb.kb("notes").identity_key == old_key
    with make(tmp_path / "data", FakeEmbedder(model="model-a")) as lb:
        hits = lb.search(
            "note", kb="notes", mode="dense", top_k=20, no_answer_threshold=NO_FLOOR
        ).hits
        assert len({h.provenance.path for h in hits}) == 6
    with make(tmp_path / "data", FakeEmbedder(model="model-b")) as lb:
        # model-b is not complete yet: dense search says so and keyword answers.
        response = lb.search("note", kb="notes")
        assert any("embedding_identity_mismatch" in w for w in response.warnings)
        lb.sync("notes")
        kb = lb.kb("notes")
        assert kb.identity_key != old_key and kb.identity_key is not None
        assert kb.identity_key.startswith("model-b")
        hits = lb.search(
            "note", kb="notes", mode="dense", top_k=20, no_answer_threshold=NO_FLOOR
        ).hits
        assert len({h.provenance.path for h in hits}) == 6


def test_new_chunking_settings_rechunk_on_the_next_pass(tmp_path: Path, folder: Path) -> None:
    write(folder / "long.md", "# Long\n\n" + "A sentence about chunking settings. " * 100)
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        before = next(d for d in lb.documents("notes") if d.path == "notes/long.md")
        lb.update_kb("notes", ChunkSettings(chunk_size=400, overlap=50))
        report = lb.sync("notes")["notes"]
        assert report.updated == 7
        after = next(d for d in lb.documents("notes") if d.path == "notes/long.md")
        assert after.chunk_count > before.chunk_count
        assert after.id == before.id


def test_a_crashed_pass_leaves_documents_that_go_back_to_pending(
    tmp_path: Path, folder: Path
) -> None:
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        kb = lb.kb("notes")
        # What a kill -9 between two states leaves behind:
        lb.store.set_document_state(kb.id, "notes/note0.md", DocumentState.EMBEDDING)
    with make(tmp_path / "data") as lb:
        lb.sync("notes")
        assert set(paths(lb).values()) == {"indexed"}


def test_a_stop_request_ends_the_pass_and_leaves_the_rest_pending(
    tmp_path: Path, folder: Path
) -> None:
    stop = threading.Event()
    stop.set()
    with make(tmp_path / "data") as lb:
        report = lb.add([folder], kb="notes", stop=stop)
        assert report.stopped == "stop requested"
        assert set(paths(lb).values()) == {"pending"}
        assert lb.kb("notes").state is KbState.PENDING
        assert lb.sync("notes")["notes"].added == 6


def test_a_second_indexer_is_refused_with_a_clear_message(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data") as first, first.ingesting(), make(tmp_path / "data") as second:
        with pytest.raises(Conflict) as caught:
            second.add([folder], kb="notes")
        assert "is indexing this data directory" in str(caught.value)
        assert second.search  # type: ignore[truthy-function]  # searching needs no lock
    with make(tmp_path / "data") as again:
        assert again.add([folder], kb="notes").added == 6


@contextmanager
def watching(lb: Lorebase) -> Iterator[threading.Thread]:
    """``lb.watch`` of the base "notes" on a thread of its own, stopped (and checked to
    end) when the block ends."""
    stop = threading.Event()
    thread = threading.Thread(
        target=lb.watch, kwargs={"kb": "notes", "stop": stop, "rescan_seconds": 30}
    )
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_watch_follows_changes(tmp_path: Path, folder: Path) -> None:
    with make(tmp_path / "data") as lb:
        lb.create_kb("notes", sources=[folder])
        with watching(lb):
            wait_until(lambda: len(paths(lb)) == 6)
            write(folder / "later.md", "# Later\n\nWritten while watching: zebra.\n")
            wait_until(lambda: lb.search("zebra", kb="notes", mode="keyword").hits != [])


def test_a_watcher_waits_for_another_indexer_between_its_passes(
    tmp_path: Path, folder: Path
) -> None:
    """The watcher holds the ingestion lock only for a pass: another indexer (`lorebase add`)
    goes between two passes, and the watcher's next pass waits for it instead of ending."""
    with make(tmp_path / "data") as lb:
        lb.create_kb("notes", sources=[folder])
        with watching(lb) as thread:
            wait_until(lambda: len(paths(lb)) == 6)
            other = IngestLock(tmp_path / "data", "lorebase add")
            wait_until(lambda: _taken(other))  # between two passes
            write(folder / "later.md", "# Later\n\nWritten while another indexed: zebra.\n")
            time.sleep(2.5)  # the watcher sees the change and waits for the lock
            assert thread.is_alive()
            assert lb.search("zebra", kb="notes", mode="keyword").hits == []
            other.release()
            wait_until(lambda: lb.search("zebra", kb="notes", mode="keyword").hits != [])


def _taken(lock: IngestLock) -> bool:
    """Whether ``lock`` was taken now (False: another holds it)."""
    try:
        lock.acquire()
    except Conflict:
        return False
    return True


def test_files_added_on_their_own_are_followed(tmp_path: Path, folder: Path) -> None:
    from lorebase.ingest.files import SourceFile

    loose = write(tmp_path / "loose" / "memo.md", "# Memo\n\nAbout walruses.\n")
    older = write(tmp_path / "old" / "legacy.md", "# Legacy\n\nAbout narwhals.\n")
    with make(tmp_path / "data") as lb:
        # A file added by path before files were followed: no source, adopted when re-added.
        lb.syncer.sync(
            lb.ensure_kb("notes"), sources=[], extra_files=[SourceFile(older, older.name)]
        )
        lb.add([folder, loose, older, folder / "note1.md"], kb="notes")
        kinds = {s.label: s.kind.value for s in lb.sources("notes")}
        assert kinds == {"memo.md": "file", "legacy.md": "file", "notes": "folder"}
        assert {"memo.md", "legacy.md", "notes/note1.md"} <= set(paths(lb))
        assert "note1.md" not in paths(lb)
        older.unlink()
        (tmp_path / "loose").rename(tmp_path / "elsewhere")  # its folder is gone: kept, waiting
        lb.sync("notes")
        assert "legacy.md" not in paths(lb) and "memo.md" in paths(lb)
        kb = lb.kb("notes")
        assert kb.state is KbState.WAITING and "memo.md" in (kb.state_reason or "")
        # A folder added later takes over the files inside it.
        inner = write(folder / "extra" / "x.md", "# X\n\nExtra.\n")
        lb.add([inner], kb="notes")  # inside a followed folder: that folder's
        assert "notes/extra/x.md" in paths(lb) and "x.md" not in paths(lb)
        other = write(tmp_path / "more" / "y.md", "# Y\n\nWhy.\n")
        lb.add([other], kb="notes")
        lb.add([other.parent], kb="notes")
        assert "more/y.md" in paths(lb) and "y.md" not in paths(lb)
        assert sorted(s.label for s in lb.sources("notes")) == ["memo.md", "more", "notes"]


def test_a_queued_pass_finds_its_base_when_another_shares_its_name(tmp_path: Path) -> None:
    """Names are unique per scope: a pass queued for one base runs on that base, by id."""
    from lorebase.settings import ServeSettings

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.md").write_text(f"# {folder.name}\n\nA note.\n")
    chosen = settings(tmp_path / "data", serve=ServeSettings(workers=1, watch=False))
    with open_lorebase(settings=chosen, embedder=FakeEmbedder()) as lb:
        shared = lb.create_kb("notes", scope="global", sources=[first])
        lb.create_kb("notes", scope="personal", sources=[second])
        lb.start_serving()
        lb.request_pass(shared)
        assert lb.queue.join(30)
        assert (lb.queue.stats.done, lb.queue.stats.failed) == (1, 0)
        assert lb.kb_by_id(shared.id, totals=True).indexed == 1


# -- two phases: searchable by keyword first, vectors next ---------------------------------------
class Crash(BaseException):
    """What a kill -9 does to the pass: it stops where it is, nothing is caught."""


def test_documents_are_found_by_keyword_before_their_vectors_are_made(
    tmp_path: Path, folder: Path
) -> None:
    """While the first embedding call runs, every document of the pass is already written and
    found by keyword; a hybrid search answers and says how many are keyword-only so far."""
    seen: dict[str, Any] = {}

    def look(texts: Sequence[str], kind: EmbedKind) -> None:
        if kind != "document" or seen:
            return
        kb = lb.kb("notes")
        seen["keyword_only"] = lb.store.count_keyword_only([kb.id])
        seen["states"] = set(paths(lb).values())
        seen["keyword"] = lb.search("submarines", kb="notes", mode="keyword").hits
        seen["hybrid"] = lb.search("submarines", kb="notes")
        seen["totals"] = (kb.searchable, kb.embedded)

    with make(tmp_path / "data", FakeEmbedder(hook=look)) as lb:
        report = lb.add([folder], kb="notes")
        assert (report.added, report.stopped) == (6, None)
        assert seen["keyword_only"] == 6 and seen["states"] == {"embedding"}
        assert seen["totals"] == (6, 0)
        assert seen["keyword"][0].provenance.path == "notes/sub/deep.txt"
        hybrid = seen["hybrid"]
        assert hybrid.hits and hybrid.hits[0].provenance.path == "notes/sub/deep.txt"
        assert (
            "still_embedding: 6 documents are searchable by keyword only until their vectors "
            "are written" in hybrid.warnings
        )
        # Done: every document has its vectors, and the warning is gone.
        kb = lb.kb("notes")
        assert (kb.searchable, kb.embedded, kb.embedded_chunks) == (6, 6, kb.chunks)
        assert lb.store.count_keyword_only([kb.id]) == 0
        assert lb.search("submarines", kb="notes").warnings == []
        assert lb.search("submarines", kb="notes", mode="dense").hits


def test_a_crash_between_the_two_writes_is_finished_by_the_next_pass(
    tmp_path: Path, folder: Path
) -> None:
    def crash(texts: Sequence[str], kind: EmbedKind) -> None:
        if kind == "document":
            raise Crash

    write(folder / "note0.md", "# Note 0\n\nThe topic of note 0 is item0, now edited.\n")
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        write(folder / "note0.md", "# Note 0\n\nRewritten: the topic is now walruses.\n")
    with make(tmp_path / "data", FakeEmbedder(hook=crash)) as lb, pytest.raises(Crash):
        lb.sync("notes")
    embedder = FakeEmbedder()
    with make(tmp_path / "data", embedder) as lb:
        # Left between the writes: the new version found by keyword, the old one gone.
        assert paths(lb)["notes/note0.md"] == "embedding"
        assert lb.store.count_keyword_only([lb.kb("notes").id]) == 1
        assert lb.search("walruses", kb="notes", mode="keyword").hits
        assert not lb.search("edited", kb="notes", mode="keyword").hits
        report = lb.sync("notes")["notes"]
        assert (report.unchanged, report.added, report.embedded) == (5, 1, 1)
        assert set(paths(lb).values()) == {"indexed"}
        assert lb.store.count_keyword_only([lb.kb("notes").id]) == 0
        # The fake embedder's cosines sit under the relevance floor: rank without it.
        hits = lb.search("walruses", kb="notes", mode="dense", no_answer_threshold=NO_FLOOR).hits
        assert hits[0].provenance.path == "notes/note0.md"


def test_a_document_deleted_while_it_waits_for_vectors_stays_deleted(
    tmp_path: Path, folder: Path
) -> None:
    def delete_one(texts: Sequence[str], kind: EmbedKind) -> None:
        document = lb.store.get_document(lb.kb("notes").id, "notes/note3.md")
        if kind == "document" and document is not None:
            lb.store.delete_document(document.kb_id, document.id)

    with make(tmp_path / "data", FakeEmbedder(hook=delete_one)) as lb:
        report = lb.add([folder], kb="notes")
        assert (report.added, report.stopped) == (5, None)
        assert "notes/note3.md" not in paths(lb)
        assert set(paths(lb).values()) == {"indexed"}


def test_an_embedder_lost_after_the_first_write_leaves_documents_found_by_keyword(
    tmp_path: Path, folder: Path
) -> None:
    with make(tmp_path / "data", FakeEmbedder(unavailable=True)) as lb:
        report = lb.add([folder], kb="notes")
        assert report.stopped and report.added == 0
        assert set(paths(lb).values()) == {"pending"}
        assert lb.search("submarines", kb="notes", mode="keyword").hits
        kb = lb.kb("notes")
        assert (kb.searchable, kb.embedded) == (6, 0)
    with make(tmp_path / "data") as lb:
        assert lb.sync("notes")["notes"].added == 6
        assert lb.kb("notes").embedded == 6


@pytest.mark.parametrize("drain_seconds", [5.0, 0.0])
def test_a_stop_drains_the_documents_waiting_for_vectors(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, drain_seconds: float
) -> None:
    """A stop request during the pass: the documents already written get their vectors one
    by one while the drain window lasts; past it they go back to pending, found by keyword."""
    from lorebase.ingest import embedding

    monkeypatch.setattr(embedding, "DRAIN_SECONDS", drain_seconds)
    stop = threading.Event()

    def stop_at_first_call(texts: Sequence[str], kind: EmbedKind) -> None:
        stop.set()

    with make(tmp_path / "data", FakeEmbedder(hook=stop_at_first_call)) as lb:
        lb.ingestor.lookahead_chunks = 3  # three notes written, then the first embedded
        lb.ingestor.batch_chunks = 1
        report = lb.add([folder], kb="notes", stop=stop)
        assert report.stopped == "stop requested"
        states = list(paths(lb).values())
        drained = 2 if drain_seconds else 0
        assert (states.count("indexed"), states.count("pending")) == (1 + drained, 5 - drained)
        kb = lb.kb("notes")
        assert lb.store.count_keyword_only([kb.id]) == 2 - drained
        assert (kb.searchable, kb.embedded) == (3, 1 + drained)
        assert lb.sync("notes")["notes"].added == 5 - drained
        assert lb.store.count_keyword_only([kb.id]) == 0


def test_a_stop_while_the_read_documents_are_embedded_ends_the_pass_in_seconds(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file read (the lookahead holds them all) when the stop comes: the documents
    being embedded get their vectors, the others wait for the next pass, found by keyword."""
    from lorebase.ingest import embedding

    monkeypatch.setattr(embedding, "DRAIN_SECONDS", 0.0)
    stop = threading.Event()

    def stop_at_first_call(texts: Sequence[str], kind: EmbedKind) -> None:
        stop.set()

    with make(tmp_path / "data", FakeEmbedder(hook=stop_at_first_call)) as lb:
        lb.ingestor.batch_chunks = 1
        report = lb.add([folder], kb="notes", stop=stop)
        assert report.stopped == "stop requested"
        states = list(paths(lb).values())
        assert (states.count("indexed"), states.count("pending")) == (1, 5)
        kb = lb.kb("notes")
        assert lb.store.count_keyword_only([kb.id]) == 5
        assert lb.sync("notes")["notes"].added == 5


def test_a_stop_during_a_long_document_leaves_it_to_the_next_pass(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document of many chunks is embedded in several calls; when the drain window closes
    between two of them, it goes back to pending, whole and found by keyword."""
    from lorebase.ingest import embedding

    monkeypatch.setattr(embedding, "DRAIN_SECONDS", 0.0)
    for name in os.listdir(folder):
        if name.endswith(".md"):
            os.remove(folder / name)
    sentences = " ".join(f"Walrus colony sentence number {n}." for n in range(600))
    write(folder / "long.md", f"# Long\n\n{sentences}\n")
    stop = threading.Event()
    calls = {"n": 0}

    def stop_at_first_call(texts: Sequence[str], kind: EmbedKind) -> None:
        calls["n"] += 1
        stop.set()

    with make(tmp_path / "data", FakeEmbedder(hook=stop_at_first_call, batch_size=2)) as lb:
        report = lb.add([folder], kb="notes", stop=stop)
        assert report.stopped == "stop requested"
        long = next(d for d in lb.documents("notes") if d.path == "notes/long.md")
        assert long.chunk_count > 4 and long.state is DocumentState.PENDING
        assert calls["n"] < long.chunk_count  # not embedded to the end
        assert lb.search("walrus", kb="notes", mode="keyword").hits
        assert lb.store.count_keyword_only([lb.kb("notes").id]) >= 1
        assert lb.sync("notes")["notes"].stopped is None
        assert lb.store.count_keyword_only([lb.kb("notes").id]) == 0


def test_a_pass_that_ends_before_an_edited_documents_vectors_loses_none(
    tmp_path: Path, folder: Path
) -> None:
    """An edited document that reuses some of its old vectors is written whole once its new
    vectors are made: until then its old version answers in both arms, and a pass that ends
    first (here: the embedder goes away) leaves the old chunks, and their vectors, in place."""
    sections = "\n\n".join(
        f"## Part {n}\n\n" + f"Paragraph {n} about gliders. " * 40 for n in range(8)
    )
    write(folder / "long.md", "# Long\n\n" + sections + "\n")
    with make(tmp_path / "data") as lb:
        lb.add([folder], kb="notes")
        chunks = lb.kb("notes").chunks
    write(folder / "long.md", "# Long\n\n" + sections + "\n\n## Part 8\n\nA new part on kites.\n")
    with make(tmp_path / "data", FakeEmbedder(unavailable=True)) as lb:
        assert lb.sync("notes")["notes"].stopped
        assert paths(lb)["notes/long.md"] == "pending"
        assert lb.store.count_keyword_only([lb.kb("notes").id]) == 0
    with make(tmp_path / "data") as lb:  # the old version still answers by vector
        dense = lb.search(
            "gliders", kb="notes", mode="dense", top_k=20, no_answer_threshold=NO_FLOOR
        ).hits
        assert any(hit.provenance.path == "notes/long.md" for hit in dense)
        assert not lb.search("kites", kb="notes", mode="keyword").hits
    with make(tmp_path / "data") as lb:
        report = lb.sync("notes")["notes"]
        assert (report.updated, report.embedded) == (1, 1)  # only the new part
        assert report.reused >= 8
        assert set(paths(lb).values()) == {"indexed"}
        assert lb.kb("notes").chunks == chunks + 1
        assert lb.search("kites", kb="notes", mode="keyword").hits


def test_a_pass_leaves_out_ignored_dependency_and_secret_files_and_counts_them(
    tmp_path: Path, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    write(folder / ".gitignore", "*.log\n")
    write(folder / "debug.log", "noise\n")
    write(folder / "node_modules" / "pkg" / "README.md", "# Pkg\n\nA dependency.\n")
    write(folder / ".env", "TOKEN=hunter2\n")
    write(folder / "id_rsa", "-----BEGIN KEY-----\n")
    with make(tmp_path / "data") as lb:
        first = lb.add([folder], kb="notes")
        assert first.added == 6
        assert first.left_out == {"dependency_or_build": 1, "ignored": 1, "secret": 2}
        assert not any(".env" in path or "id_rsa" in path for path in paths(lb))
        # A second pass counts them again, and they stay out.
        again = lb.sync("notes")["notes"]
        assert again.left_out == first.left_out
        # Secrets are counted, never named: not in a report, not in the logs.
        said = caplog.text + repr(first) + repr(again)
        assert ".env" not in said and "id_rsa" not in said


def test_a_source_over_its_file_limit_says_so(tmp_path: Path, folder: Path) -> None:
    options = {"extract": ExtractSettings(max_source_files=4)}
    with open_lorebase(
        settings=settings(tmp_path / "data", **options), embedder=FakeEmbedder()
    ) as lb:
        report = lb.add([folder], kb="notes")
        assert report.added == 4 and report.left_out == {"over_source_limit": 2}
        # Stable path order: the first four files, the rest left out.
        assert sorted(paths(lb)) == [f"notes/note{n}.md" for n in range(4)]


def test_secrets_and_machine_written_files_are_never_indexed(
    tmp_path: Path, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """By content, for any file read (the walk's name rules come first): a private key pasted
    into a note, a minified bundle, a lock file, generated code. Counted by reason, never
    named; a note that gains a token leaves the index at the next pass."""
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
    )
    write(folder / "ops" / "howto-login.md", "# Login\n\nPaste this:\n\n" + key)
    write(folder / "web" / "app.js", "!function(){" + "var a=1;" * 1000 + "}()\n")
    write(folder / "web" / "package-lock.json", '{"lockfileVersion": 3}\n')
    write(
        folder / "api_pb2.py", "# Generated by the protocol buffer compiler.  DO NOT EDIT!\nx = 1\n"
    )
    caplog.set_level("DEBUG")
    with make(tmp_path / "data") as lb:
        report = lb.add([folder], kb="notes")
        assert report.left_out == {"secret": 1, "generated": 3}
        assert set(paths(lb)) == {f"notes/note{n}.md" for n in range(5)} | {"notes/sub/deep.txt"}
        assert not lb.search("OPENSSH", kb="notes", mode="keyword").hits
        # A note that gains a token leaves the index.
        write(folder / "note2.md", "# Note 2\n\nci token ghp_" + "a1B2c3D4e5" * 4 + "\n")
        again = lb.sync("notes")["notes"]
        assert again.left_out.get("secret") == 2
        assert "notes/note2.md" not in paths(lb)
        assert not lb.search("item2", kb="notes", mode="keyword").hits
    logged = caplog.text + repr(report) + repr(again)
    assert "howto-login" not in logged and "note2" not in logged
