"""``Catalogue.snapshot``: the reads inside, on one thread, as one snapshot on SQLite (one read
transaction: a search's reads agree with each other), each read its own on PostgreSQL. Run
against every backend."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from contract.store_contract import IDENTITY, put, stored_ids, unit
from lorebase.store.base import DocumentRecord, Store
from lorebase.store.sqlite import SqliteStore
from lorebase.types import Chunk


def test_reads_inside_a_snapshot_see_one_state_on_sqlite_and_the_latest_elsewhere(
    store: Store,
) -> None:
    kb = store.create_kb("docs")
    first, chunks = put(store, kb, "a.md", ["zebra one"])
    with store.snapshot():
        assert [c.id for c in store.get_chunks([kb.id], stored_ids(first.id, chunks))]
        written: list[tuple[DocumentRecord, list[Chunk]]] = []
        writer = threading.Thread(target=lambda: written.append(put(store, kb, "b.md", ["z 2"])))
        writer.start()  # another writer, meanwhile
        writer.join()
        later, more = written[0]
        seen = store.get_chunks([kb.id], stored_ids(later.id, more))
        # On another thread: a read of its own, which sees the write.
        other: list[int] = []
        reader = threading.Thread(
            target=lambda: other.append(len(store.get_chunks([kb.id], stored_ids(later.id, more))))
        )
        reader.start()
        reader.join()
        assert other == [1]
        if isinstance(store, SqliteStore):
            assert seen == []  # the snapshot the first read began
            assert store.get_kb_by_id(kb.id).documents == 1
        else:
            assert len(seen) == 1
    # After it, the write is there for every read.
    assert len(store.get_chunks([kb.id], stored_ids(later.id, more))) == 1
    assert store.get_kb_by_id(kb.id).documents == 2


def test_a_failure_inside_a_snapshot_ends_it_and_loses_nothing(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(store, kb, "a.md", ["zebra one"])
    with pytest.raises(RuntimeError), store.snapshot():
        store.get_chunks([kb.id], stored_ids(doc.id, chunks))
        raise RuntimeError("a search failed half-way")
    later, more = put(store, kb, "b.md", ["zebra two"])
    assert len(store.get_chunks([kb.id], stored_ids(later.id, more))) == 1
    with store.snapshot(), store.snapshot():  # nested: one snapshot still
        assert len(store.get_chunks([kb.id], stored_ids(doc.id, chunks))) == 1


def test_what_a_snapshot_fixes_is_read_once_in_it(tmp_path: Path) -> None:
    """In one snapshot a search asks a base's generation and an identity's id of the database
    once however many of its reads need them (SQLite's readers keep what their transaction was
    told); a snapshot after sees a change (what was kept went with the transaction)."""
    store = SqliteStore(tmp_path / "lorebase.db")
    try:
        kb = store.create_kb("docs")
        vectors = np.stack([unit(i) for i in range(6)])
        put(store, kb, "a.md", [f"chunk {i}" for i in range(6)], vectors=vectors)
        statements: list[str] = []
        for _ in range(2):
            with store.snapshot():
                held = store._db._reading.conn
                held.set_trace_callback(statements.append)
                try:
                    for _ in range(3):
                        store.dense_search([kb.id], IDENTITY, vectors[0], 3)
                        store.keyword_search([kb.id], "chunk", 3)
                        store.keyword_ceiling([kb.id], "chunk")
                finally:
                    held.set_trace_callback(None)
            asked = [s for s in statements if "FROM knowledge_bases" in s]
            assert len(asked) == 1 and sum("FROM identities" in s for s in statements) == 1
            assert sum("FROM kb_languages" in s for s in statements) == 1
            statements.clear()
            put(store, kb, "b.md", ["chunk more"], vectors=np.stack([unit(9)]))  # a new generation
        assert len(store.dense_search([kb.id], IDENTITY, unit(9), 1)) == 1
    finally:
        store.close()


def test_a_snapshot_looks_at_a_keyword_indexs_files_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search and its ceiling in one snapshot look at the searched index's files once (a
    damaged file is still found by the next snapshot's first look); each read outside a
    snapshot looks for itself, and a snapshot after a write finds what it wrote."""
    from lorebase.store.sqlite import tantivy_index

    looked: list[Path] = []
    real = tantivy_index.damage

    def damage(folder: Path, seen: dict[str, int]) -> str | None:
        looked.append(folder)
        return real(folder, seen)

    monkeypatch.setattr(tantivy_index, "damage", damage)
    store = SqliteStore(tmp_path / "lorebase.db")
    try:
        kb = store.create_kb("docs")
        put(store, kb, "a.md", ["zebra one", "zebra two"])
        for round_ in range(2):
            with store.snapshot():
                found = store.keyword_search([kb.id], "zebra", 5)  # caught up, then looked at
                first = len(looked)
                assert first >= 1
                assert store.keyword_ceiling([kb.id], "zebra") > 0
                assert len(store.keyword_search([kb.id], "zebra", 5)) == len(found)
                assert len(looked) == first, looked
            assert len(found) == 2 + round_
            put(store, kb, f"b{round_}.md", ["zebra more"])
            looked.clear()
        store.keyword_search([kb.id], "zebra", 5)  # the last write caught up
        looked.clear()
        store.keyword_search([kb.id], "zebra", 5)
        store.keyword_ceiling([kb.id], "zebra")
        assert len(looked) == 2
    finally:
        store.close()
