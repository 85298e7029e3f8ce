"""The Tantivy side index of the SQLite store: derived data that catches up with the chunks
table, survives losing its folder, a crash between its commit and its record, a kill -9
mid-build, and other stores on the same file; a search sees a document whole or not at all."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

import pytest

from contract.store_contract import ids_of, make_chunks, put, stored_ids
from lorebase.errors import Conflict
from lorebase.store.sqlite import SqliteStore
from lorebase.store.sqlite import tantivy_index as ti
from waiting import wait_until


def _check(store: SqliteStore) -> None:
    lexical = store._lexical
    assert isinstance(lexical, ti.TantivyIndexes)
    with store.database.read() as conn:
        lexical.check(conn)


def _fill(store: SqliteStore, documents: int = 3) -> int:
    kb = store.create_kb("docs")
    for n in range(documents):
        put(store, kb, f"d{n}.md", [f"glacier survey {n}", f"river sediment {n}"])
    return kb.id


def test_the_index_lives_beside_the_database_and_catches_up(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3
        assert (tmp_path / "lorebase.lexical" / f"kb{kb_id}" / "meta.json").is_file()
        kb = store.get_kb_by_id(kb_id, totals=False)
        put(store, kb, "d9.md", ["glacier again"])
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 4
        put(store, kb, "d9.md", ["nothing frozen here"])  # replaced: its old chunk goes
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3
        store.delete_documents(kb_id, [store.list_documents(kb_id)[0].id])
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 2
        _check(store)
        # The FTS5 index is not kept beside it.
        with store.database.read() as conn:
            assert not conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'"
            ).fetchone()


@pytest.mark.parametrize("damage", ["deleted", "garbage", "record"])
def test_a_lost_or_damaged_index_is_rebuilt_from_the_chunks(tmp_path: Path, damage: str) -> None:
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        before = store.keyword_search([kb_id], "glacier sediment", 10)
    folder = tmp_path / "lorebase.lexical"
    if damage == "deleted":
        import shutil

        shutil.rmtree(folder / f"kb{kb_id}")
    elif damage == "garbage":
        (folder / f"kb{kb_id}" / "meta.json").write_text("{ not json")
    else:
        (folder / "state.sqlite").unlink()
    with SqliteStore(tmp_path / "lorebase.db") as store:
        assert store.keyword_search([kb_id], "glacier sediment", 10) == before
        _check(store)


def test_a_crash_between_the_commit_and_its_record_is_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tantivy committed, the record did not: the next catch-up deletes and adds the same
    documents again, and no chunk is held twice."""
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3  # built and recorded
        kb = store.get_kb_by_id(kb_id, totals=False)
        put(store, kb, "d1.md", ["glacier changed", "and more glacier"])  # a catch-up to do
        put(store, kb, "d7.md", ["glacier new"])
        original = ti.TantivyIndexes._apply

        def crash_after_commit(self: ti.TantivyIndexes, *args: Any, **kwargs: Any) -> NoReturn:
            original(self, *args, **kwargs)
            raise RuntimeError("crash after the index committed")

        monkeypatch.setattr(ti.TantivyIndexes, "_apply", crash_after_commit)
        with pytest.raises(RuntimeError):
            store.keyword_search([kb_id], "glacier", 10)
        monkeypatch.undo()
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 5
        _check(store)


def test_a_kill_inside_a_commit_leaves_files_the_next_catch_up_cleans(tmp_path: Path) -> None:
    """Killed after a commit wrote its files (here a delete file) and before its meta.json and
    record landed: the next catch-up makes a file of the same name. Found by the crash
    harness ('FileAlreadyExists'); the leftovers are collected first now."""
    import shutil

    folder = tmp_path / "lorebase.lexical"
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3
    index = folder / f"kb{kb_id}"
    meta = (index / "meta.json").read_text()
    state = tmp_path / "state-before.sqlite"
    shutil.copy(folder / "state.sqlite", state)
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb = store.get_kb_by_id(kb_id, totals=False)
        put(store, kb, "d1.md", ["glacier melt", "a new text"])  # d1's old chunks deleted
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3
    leftovers = {p.name for p in index.iterdir() if p.suffix == ".del"}
    assert leftovers  # what the killed commit would have left
    (index / "meta.json").write_text(meta)  # the kill: its meta.json never landed
    shutil.copy(state, folder / "state.sqlite")  # nor its record
    with SqliteStore(tmp_path / "lorebase.db") as store:
        hits = store.keyword_search([kb_id], "glacier melt", 10)
        assert len(hits) == 3
        _check(store)


def test_a_build_killed_midway_leaves_a_usable_index(tmp_path: Path) -> None:
    """kill -9 while a large catch-up is adding documents: the next process rebuilds or
    finishes it, and the index holds exactly the chunks."""
    database = tmp_path / "lorebase.db"
    with SqliteStore(database, lexical="fts5") as store:  # no Tantivy index made here
        kb = store.create_kb("docs")
        words = ["glacier", "river", "sediment", "survey", "melt", "alpine", "delta", "basin"]
        for n in range(400):
            put(store, kb, f"d{n}.md", [f"{words[n % 8]} {n} " * 40 for _ in range(20)])
    script = textwrap.dedent(
        f"""
        from lorebase.store.sqlite import SqliteStore
        from lorebase.store.sqlite import tantivy_index as ti
        import sys
        original = ti.TantivyIndexes._apply
        def announced(self, *args, **kwargs):
            print("building", flush=True)
            return original(self, *args, **kwargs)
        ti.TantivyIndexes._apply = announced
        store = SqliteStore({str(database)!r})
        store.keyword_search([{kb.id}], "glacier", 10)
        print("done", flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "building"
    # The wait is the test: a kill some way into the build (of 8,000 chunks, which takes longer).
    # A build has no milestone the test could wait for, and an early or late kill tests less,
    # never something false.
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    with SqliteStore(database) as store:
        assert len(store.keyword_search([kb.id], "glacier", 1000)) == 50 * 20
        _check(store)


def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    database = tmp_path / "lorebase.db"
    with SqliteStore(database) as first, SqliteStore(database) as second:
        kb_id = _fill(first)
        assert len(second.keyword_search([kb_id], "glacier", 10)) == 3
        kb = second.get_kb_by_id(kb_id, totals=False)
        put(second, kb, "new.md", ["glacier from the second store"])
        assert len(first.keyword_search([kb_id], "glacier", 10)) == 4
        first.delete_kb(kb_id)
        fresh = second.create_kb("docs")  # may reuse the id: a new, empty index
        put(second, fresh, "other.md", ["tulip"])
        assert second.keyword_search([fresh.id], "glacier", 10) == []
        assert len(first.keyword_search([fresh.id], "tulip", 10)) == 1
        _check(first)
        _check(second)


def test_a_search_sees_a_document_whole_or_not_at_all(tmp_path: Path) -> None:
    """A writer keeps replacing one document with a new version of four chunks; concurrent
    searches find the four chunks of one version, never a mix or a part."""
    texts = [[f"marker v{version} part{p}" for p in range(4)] for version in range(30)]
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb = store.create_kb("docs")
        record, _ = put(store, kb, "doc.md", texts[0])
        versions = {
            frozenset(stored_ids(record.id, make_chunks(version, salt="doc.md"))): n
            for n, version in enumerate(texts)
        }
        stop, searched = threading.Event(), threading.Event()
        seen: list[int] = []
        failures: list[BaseException] = []

        def write() -> None:
            try:
                for version in texts[1:]:
                    put(store, kb, "doc.md", version)
                    searched.clear()
                    searched.wait(5)  # a search between versions, however loaded the machine
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)
            finally:
                stop.set()

        writer = threading.Thread(target=write)
        writer.start()
        while not stop.is_set():
            found = frozenset(ids_of(store.keyword_search([kb.id], "marker", 50)))
            assert found in versions, f"{len(found)} chunks of no single version"
            seen.append(versions[found])
            searched.set()
        writer.join()
        assert not failures
        assert len(store.keyword_search([kb.id], "marker", 50)) == 4
        assert len(set(seen)) > 1  # the searches did see the document change


def test_check_reports_an_index_that_disagrees(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        _check(store)
        lexical = store._lexical
        assert isinstance(lexical, ti.TantivyIndexes)
        with store.database.read() as conn:
            (index,) = lexical.indexes_for(conn, [kb_id])
        writer = index.writer(heap_size=16_000_000, num_threads=1)
        writer.delete_all_documents()
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        with pytest.raises(Conflict, match=r"delete .* to rebuild it"):
            _check(store)


def test_switching_engines_keeps_every_chunk_findable(tmp_path: Path) -> None:
    database = tmp_path / "lorebase.db"
    with SqliteStore(database) as store:
        kb_id = _fill(store)
        expected = ids_of(store.keyword_search([kb_id], "glacier", 10))
    with SqliteStore(database, lexical="fts5") as store:
        assert sorted(ids_of(store.keyword_search([kb_id], "glacier", 10))) == sorted(expected)
        kb = store.get_kb_by_id(kb_id, totals=False)
        put(store, kb, "more.md", ["glacier added while FTS5 kept the index"])
    with SqliteStore(database) as store:  # back to Tantivy: it catches up with that write
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 4
        _check(store)


def test_writes_are_followed_in_the_background(tmp_path: Path) -> None:
    """Once writes pause, the index catches up by itself: the next search finds it current."""
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        lexical = store._lexical
        assert isinstance(lexical, ti.TantivyIndexes)
        with store.database.read() as conn:
            (generation,) = conn.execute(
                "SELECT generation FROM knowledge_bases WHERE id = ?", (kb_id,)
            ).fetchone()

        def caught_up() -> bool:
            slot = lexical._slots.get(kb_id)
            return slot is not None and slot.generation >= generation

        wait_until(caught_up, ti.QUIET_S + 30, what="the index to catch up after the writes paused")
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3


def test_a_process_beside_the_indexer_leaves_the_following_to_it(tmp_path: Path) -> None:
    """A store that does not follow its writes (a server's answering process: its indexer
    writes the chunks and follows them) starts no background catch-up; its next search
    catches the base up itself and finds every chunk, and another store over the same file
    that follows (the indexer) catches up in the background."""
    database = tmp_path / "lorebase.db"
    with SqliteStore(database, follow_writes=False) as store:
        kb_id = _fill(store)
        time.sleep(ti.QUIET_S + 0.5)  # a follower would have caught up by now
        lexical = store._lexical
        assert isinstance(lexical, ti.TantivyIndexes)
        assert lexical._follower is None and kb_id not in lexical._slots
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3
        with SqliteStore(database) as indexer:
            kb = indexer.get_kb_by_id(kb_id, totals=False)
            put(indexer, kb, "more.md", ["glacier written by the indexer"])
            follows = indexer._lexical
            assert isinstance(follows, ti.TantivyIndexes) and follows._follower is not None
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 4


def test_closing_catches_up_with_the_last_writes(tmp_path: Path) -> None:
    """A store closed right after writing leaves the index current: the next process's first
    search has nothing to catch up."""
    database = tmp_path / "lorebase.db"
    with SqliteStore(database) as store:
        kb_id = _fill(store)
        with store.database.read() as conn:
            (generation,) = conn.execute(
                "SELECT generation FROM knowledge_bases WHERE id = ?", (kb_id,)
            ).fetchone()
    state = sqlite3.connect(tmp_path / "lorebase.lexical" / "state.sqlite")
    try:
        recorded = state.execute(
            "SELECT generation FROM bases WHERE kb_id = ?", (kb_id,)
        ).fetchone()
    finally:
        state.close()
    assert recorded == (generation,)


def test_a_failed_background_catch_up_is_logged_by_kind_and_the_search_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb_id = _fill(store)
        lexical = store._lexical
        assert isinstance(lexical, ti.TantivyIndexes)

        def broken(*_: object) -> None:
            raise RuntimeError("glacier sediment: text that must not reach a log")

        monkeypatch.setattr(lexical, "indexes_for", broken)
        with caplog.at_level("WARNING", logger=ti.__name__):
            lexical._catch_up_all()  # what the follower thread runs
        monkeypatch.undo()
        messages = [r.getMessage() for r in caplog.records if r.name == ti.__name__]
        assert messages  # (the follower thread may have logged the same failure too)
        assert all("RuntimeError" in m and "glacier" not in m for m in messages)
        assert len(store.keyword_search([kb_id], "glacier", 10)) == 3


def _searched(reader: SqliteStore) -> tuple[int, ti.TantivyIndexes, Any]:
    """A base filled and searched once: its id, the store's indexes and the base's slot."""
    kb_id = _fill(reader)
    assert len(reader.keyword_search([kb_id], "glacier", 10)) == 3
    lexical = reader._lexical
    assert isinstance(lexical, ti.TantivyIndexes)
    return kb_id, lexical, lexical._slots[kb_id]


def _written_apart(database: Path, kb_id: int, documents: int) -> None:
    """``documents`` more of one chunk each, by another store (the indexer's process), each
    its own commit (a segment each, and maybe a merge)."""
    with SqliteStore(database) as writer:
        kb = writer.get_kb_by_id(kb_id, totals=False)
        for n in range(documents):
            put(writer, kb, f"w{n}.md", [f"glacier written apart {n}"])
            assert len(writer.keyword_search([kb_id], "glacier", 10)) == 4 + n


def _term_files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir() if path.suffix == ".term"}


def test_a_searcher_reads_only_segments_its_store_has_looked_at(tmp_path: Path) -> None:
    """What another process commits (or merges) reaches a store's searcher only when the
    store reloads it (its catch-up, or a look that finds new segment files) and sizes the
    files: a file it maps is one the damage check knows, so a file truncated later is found
    before a read of it (a SIGBUS)."""
    database = tmp_path / "lorebase.db"
    folder = tmp_path / "lorebase.lexical"
    with SqliteStore(database, follow_writes=False) as reader:
        kb_id, _, slot = _searched(reader)
        _written_apart(database, kb_id, 4)
        time.sleep(1.0)  # Tantivy's own reader would have followed the commits by now
        assert slot.index.searcher().num_docs == 3 * 2  # the chunks it caught up to
        assert not _term_files(folder / f"kb{kb_id}") <= set(slot.sizes)  # not looked at yet
        assert len(reader.keyword_search([kb_id], "glacier", 10)) == 7  # its catch-up
        assert slot.index.searcher().num_docs == 3 * 2 + 4
        assert _term_files(folder / f"kb{kb_id}") <= set(slot.sizes)


def test_segments_that_appear_after_a_catch_up_are_read_once_sized(tmp_path: Path) -> None:
    """A merge that ends after the last catch-up (or another process's commit) leaves new
    segment files: the next look at the index sizes them and reloads the searcher onto them,
    so a base that stops changing is not searched over its pre-merge segments for good."""
    database = tmp_path / "lorebase.db"
    with SqliteStore(database, follow_writes=False) as reader:
        kb_id, lexical, slot = _searched(reader)
        _written_apart(database, kb_id, 1)
        assert slot.index.searcher().num_docs == 3 * 2
        assert not lexical._quarantined(kb_id, slot)  # the look a search makes
        assert slot.index.searcher().num_docs == 3 * 2 + 1
        assert _term_files(tmp_path / "lorebase.lexical" / f"kb{kb_id}") <= set(slot.sizes)


def test_a_searcher_that_cannot_be_reloaded_is_let_go_not_raised(tmp_path: Path) -> None:
    """The look a search makes reloads a searcher onto new segment files: when that reload
    fails (its files changed under it), the base's index is let go as damaged and rebuilt,
    and the search is not the one to fail."""
    database = tmp_path / "lorebase.db"

    class Unreadable:
        def reload(self) -> NoReturn:
            raise ValueError("a segment file is gone")

    with SqliteStore(database, follow_writes=False) as reader:
        kb_id, lexical, slot = _searched(reader)
        _written_apart(database, kb_id, 1)
        slot.index = Unreadable()
        assert lexical._quarantined(kb_id, slot)
        assert lexical.damaged([kb_id]) or kb_id not in lexical._slots  # let go (rebuilding)
        wait_until(lambda: not lexical.damaged([kb_id]))
        assert len(reader.keyword_search([kb_id], "glacier", 10)) == 4  # rebuilt, whole
