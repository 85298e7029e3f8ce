"""The store as a whole: every role scoped by base, threads, closing, two store objects on
one database. Run against every backend."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from contract.store_contract import (
    IDENTITY,
    Backend,
    ids_of,
    make_chunks,
    new_doc,
    put,
    unit,
)
from lorebase.errors import InvalidInput, NotFound
from lorebase.store.base import Store


# -- scoping -----------------------------------------------------------------------------------
def test_ids_from_another_knowledge_base_find_nothing(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    doc_a, _ = put(store, a, "x.md", ["zebra in a"], vectors=unit(1)[None])
    put(store, b, "x.md", ["zebra in b"], vectors=unit(2)[None])
    chunk_a = ids_of(store.keyword_search([a.id], "zebra", 5))
    assert len(chunk_a) == 1
    with pytest.raises(NotFound):
        store.get_document_by_id(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.document_text(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.delete_document(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.neighbors([b.id], chunk_a[0], 1)
    assert store.get_chunks([b.id], chunk_a) == []
    assert ids_of(store.keyword_search([b.id], "zebra", 5)) != chunk_a
    assert ids_of(store.keyword_search([b.id], "zebra", 5, [doc_a.id])) == []
    assert chunk_a[0] not in ids_of(store.dense_search([b.id], IDENTITY, unit(1), 5))
    both = store.keyword_search([a.id, b.id], "zebra", 5)
    assert len(both) == 2
    assert {c.provenance.knowledge_base for c in store.get_chunks([a.id, b.id], ids_of(both))} == {
        "a",
        "b",
    }
    assert len(store.dense_search([a.id, b.id], IDENTITY, unit(1), 5)) == 2
    assert store.keyword_search([], "zebra", 5) == []


def test_identical_files_in_two_places_get_distinct_chunk_ids(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    chunks = make_chunks(["zebra copy", "alpha copy"], salt="same")  # the very same chunk ids
    for kb, path in ((a, "one.md"), (a, "two.md"), (b, "one.md")):
        store.replace_document(kb.id, new_doc(path, "same"), chunks, None, None, "k")
    hits = store.keyword_search([a.id, b.id], "zebra", 10)
    assert len(hits) == len(set(ids_of(hits))) == 3
    assert {c.provenance.path for c in store.get_chunks([a.id], ids_of(hits))} == {
        "one.md",
        "two.md",
    }


# -- concurrency -------------------------------------------------------------------------------
def test_threads_can_share_a_store(store: Store) -> None:
    kb = store.create_kb("docs")
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(15):
                put(store, kb, f"w{i}.md", [f"zebra {i}"], vectors=unit(i)[None])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for i in range(30):
                store.keyword_search([kb.id], "zebra", 5)
                store.dense_search([kb.id], IDENTITY, unit(i), 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.keyword_search([kb.id], "zebra", 100)) == 15


def test_searches_neither_wait_for_nor_see_a_write_in_progress(
    store: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra old"], vectors=unit(1)[None])
    reached, release = threading.Event(), threading.Event()

    def hold() -> None:
        reached.set()
        assert release.wait(timeout=30)

    backend.after_chunks(monkeypatch, hold)
    writer = threading.Thread(
        target=put, args=(store, kb, "a.md", ["zebra new"]), kwargs={"vectors": unit(2)[None]}
    )
    writer.start()
    try:
        assert reached.wait(timeout=30)  # the replacement is half-written, uncommitted
        seen: list[list[str]] = []

        def search() -> None:
            hits = store.keyword_search([kb.id], "zebra", 10)
            seen.append([c.text for c in store.get_chunks([kb.id], ids_of(hits))])
            seen.append([str(store.get_kb("docs").chunks)])

        reader = threading.Thread(target=search)
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive(), "a search waited for the write to finish"
        assert seen == [["zebra old"], ["1"]]
    finally:
        release.set()
        writer.join(timeout=30)
    hits = store.keyword_search([kb.id], "zebra", 10)
    assert [c.text for c in store.get_chunks([kb.id], ids_of(hits))] == ["zebra new"]


def test_a_closed_store_says_so_for_reads_and_writes(backend: Backend, tmp_path: Path) -> None:
    store = backend.open(tmp_path)
    kb = store.create_kb("docs")
    store.keyword_search([kb.id], "anything", 5)  # a pooled read connection exists now
    store.close()
    store.close()  # twice is fine
    for call in (
        lambda: store.get_kb("docs"),
        lambda: store.create_kb("other"),
        lambda: store.keyword_search([kb.id], "anything", 5),
    ):
        with pytest.raises(InvalidInput, match="closed; open it again"):
            call()


def test_a_second_store_on_the_same_database_sees_writes(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    """Two processes (here: two store objects) share one database; in-memory vector indexes
    notice the other's writes through the generation check."""
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra first"], vectors=unit(1)[None])
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1
    other = backend.open(tmp_path)
    try:
        put(other, other.get_kb("docs"), "b.md", ["zebra second"], vectors=unit(2)[None])
        hits = store.dense_search([kb.id], IDENTITY, unit(2), 10)
        assert store.get_chunks([kb.id], [hits[0][0]])[0].text == "zebra second"
        assert len(store.keyword_search([kb.id], "zebra", 10)) == 2
        other.delete_kb(kb.id)
    finally:
        other.close()
    assert store.dense_search([kb.id], IDENTITY, unit(2), 10) == []
    assert store.list_kbs() == []
