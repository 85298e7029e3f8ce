"""The ``Documents`` role (document records, atomic writes, the life cycle) and ``Metrics``.
Run against every backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from contract.store_contract import (
    DIM,
    IDENTITY,
    SETTINGS_KEY,
    Backend,
    assert_stored_vector,
    ids_of,
    make_chunks,
    new_doc,
    put,
    stored_ids,
    unit,
)
from lorebase.errors import InvalidInput, NotFound, SourceRemoved
from lorebase.store.base import Store
from lorebase.store.states import DocumentState


# -- documents ---------------------------------------------------------------------------------
def test_replace_document_writes_the_document(store: Store) -> None:
    kb = store.create_kb("docs")
    text = "Résumé ✓ — the full extracted text\n\nwith two parts"
    chunks = make_chunks(["zebra one", "alpha two"], [("Intro",), ("Intro", "Part")])
    vectors = np.stack([unit(1), unit(2)])
    record = store.replace_document(
        kb.id, new_doc("docs/a.md", text, title="A"), chunks, vectors, IDENTITY, SETTINGS_KEY
    )
    assert record.state is DocumentState.INDEXED and record.reason is None
    assert (record.path, record.kind, record.size, record.title) == ("docs/a.md", "md", 100, "A")
    assert (record.chunk_count, record.identity_key, record.settings_key) == (
        2,
        IDENTITY.key,
        SETTINGS_KEY,
    )
    assert record.mtime == 1.5 and len(record.id) == 32
    assert store.get_document(kb.id, "docs/a.md") == record
    assert store.get_document(kb.id, "docs/b.md") is None
    assert store.get_document_by_id(kb.id, record.id) == record
    assert store.document_text(kb.id, record.id) == text
    assert store.list_documents(kb.id) == [record]
    assert store.list_documents(kb.id, DocumentState.FAILED) == []


def test_replacing_keeps_the_id_and_swaps_the_chunks(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    first, chunks = put(
        store, kb, "a.md", ["zebra stripes", "zebra herd"], vectors=np.stack([unit(1), unit(2)])
    )
    old_ids = stored_ids(first.id, chunks)
    assert len(store.get_chunks([kb.id], old_ids)) == 2
    second, _ = put(store, kb, "a.md", ["tulip fields"], title="Renamed", vectors=unit(3)[None])
    assert second.id == first.id and second.chunk_count == 1 and second.title == "Renamed"
    assert store.keyword_search([kb.id], "zebra", 10) == []
    assert store.keyword_search([kb.id], "stripes herd", 10) == []
    assert len(store.keyword_search([kb.id], "tulip", 10)) == 1
    assert store.get_chunks([kb.id], old_ids) == []
    dense = store.dense_search([kb.id], IDENTITY, unit(1), 10)
    assert ids_of(dense) == ids_of(store.keyword_search([kb.id], "tulip", 10))
    counts = backend.row_counts(store)
    assert counts["chunks"] == 1 and counts["vectors"] == 1 and counts["sections"] == 1
    backend.check_index(store)
    assert len(store.list_documents(kb.id)) == 1


def test_replace_document_rejects_bad_vectors_and_changes_nothing(store: Store) -> None:
    kb = store.create_kb("docs")
    before, _ = put(store, kb, "a.md", ["zebra"])
    chunks = make_chunks(["tulip", "alpha"])
    for vectors, identity in (
        (np.zeros((1, DIM), np.float32), IDENTITY),  # one row short
        (np.zeros((2, DIM + 1), np.float32), IDENTITY),  # wrong dimension
        (np.zeros((2, DIM), np.float32), None),  # no identity
        (np.full((2, DIM), np.nan, np.float32), IDENTITY),
    ):
        with pytest.raises(InvalidInput):
            store.replace_document(kb.id, new_doc("a.md", "x"), chunks, vectors, identity, "k")
    assert store.get_document(kb.id, "a.md") == before
    assert len(store.keyword_search([kb.id], "zebra", 5)) == 1


def test_replace_document_is_atomic(
    store: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = store.create_kb("docs")
    before, _ = put(
        store, kb, "a.md", ["zebra one", "zebra two"], vectors=np.stack([unit(1), unit(2)])
    )
    counts_before = backend.row_counts(store)
    kb_before = store.get_kb("docs")
    backend.after_chunks(monkeypatch, _fail)
    with pytest.raises(RuntimeError):
        put(store, kb, "a.md", ["tulip new"], title="New", vectors=unit(3)[None])
    with pytest.raises(RuntimeError):
        put(store, kb, "b.md", ["alpha new"], vectors=unit(4)[None])
    monkeypatch.undo()
    assert store.get_document(kb.id, "a.md") == before
    assert store.get_document(kb.id, "b.md") is None
    assert store.keyword_search([kb.id], "tulip alpha", 10) == []
    assert len(store.keyword_search([kb.id], "zebra", 10)) == 2
    assert len(store.dense_search([kb.id], IDENTITY, unit(1), 10)) == 2
    assert backend.row_counts(store) == counts_before
    assert store.get_kb("docs") == kb_before
    backend.check_index(store)
    put(store, kb, "b.md", ["alpha works"])  # the store is still usable
    assert len(store.keyword_search([kb.id], "alpha", 10)) == 1


def _fail() -> None:
    raise RuntimeError("injected failure after the chunks were written")


def test_record_failure_drops_the_chunks(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    indexed, _ = put(store, kb, "a.pdf", ["zebra text"], vectors=unit(1)[None])
    failed = store.record_failure(kb.id, new_doc("a.pdf", size=55), "corrupt")
    assert failed.id == indexed.id and failed.state is DocumentState.FAILED
    assert (failed.reason, failed.chunk_count, failed.size) == ("corrupt", 0, 55)
    assert failed.identity_key is None
    assert store.keyword_search([kb.id], "zebra", 5) == []
    assert store.dense_search([kb.id], IDENTITY, unit(1), 5) == []
    fresh = store.record_failure(kb.id, new_doc("b.docx"), "encrypted")
    assert fresh.state is DocumentState.FAILED and fresh.reason == "encrypted"
    assert [d.path for d in store.list_documents(kb.id, DocumentState.FAILED)] == [
        "a.pdf",
        "b.docx",
    ]
    counts = backend.row_counts(store)
    assert counts["chunks"] == counts["vectors"] == counts["sections"] == 0
    backend.check_index(store)
    again, _ = put(store, kb, "a.pdf", ["tulip"])  # a fixed file indexes again, same id
    assert again.id == indexed.id and again.reason is None


def test_delete_document_purges_everything(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    doc, _ = put(
        store,
        kb,
        "a.md",
        ["zebra", "alpha"],
        trails=[("H",), ("I",)],
        vectors=np.stack([unit(1), unit(2)]),
    )
    store.delete_document(kb.id, doc.id)
    assert all(count == 0 for count in backend.row_counts(store).values()), backend.row_counts(
        store
    )
    backend.check_index(store)
    with pytest.raises(NotFound):
        store.delete_document(kb.id, doc.id)
    with pytest.raises(NotFound):
        store.document_text(kb.id, doc.id)


def test_delete_kb_purges_everything_but_a_reuse_cache(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    _, chunks = put(store, kb, "a.md", ["zebra", "alpha"], vectors=np.stack([unit(1), unit(2)]))
    put(store, kb, "b.md", ["tulip"], trails=[("T",)])
    store.record_failure(kb.id, new_doc("c.pdf"), "corrupt")
    store.dense_search([kb.id], IDENTITY, unit(1), 5)  # load an in-memory index first
    store.delete_kb(kb.id)
    assert all(count == 0 for count in backend.row_counts(store).values()), backend.row_counts(
        store
    )
    backend.check_index(store)
    assert store.dense_search([kb.id], IDENTITY, unit(1), 5) == []
    cached = store.cached_vectors(IDENTITY, [c.content_hash for c in chunks])
    if backend.reuse_outlives_chunks:
        assert_stored_vector(cached[chunks[0].content_hash], unit(1))
    else:
        assert cached == {}


# -- the life cycle ----------------------------------------------------------------------------
def test_pending_documents_keep_answering_from_the_indexed_version(store: Store) -> None:
    kb = store.create_kb("docs")
    indexed, _ = put(store, kb, "a.md", ["zebra old version"])
    store.mark_pending(kb.id, [new_doc("a.md", "zebra new version"), new_doc("b.md", "new")])
    store.mark_pending(kb.id, [])  # nothing to do
    states = {d.path: d.state for d in store.list_documents(kb.id)}
    assert states == {"a.md": DocumentState.PENDING, "b.md": DocumentState.PENDING}
    again = store.get_document(kb.id, "a.md")
    assert again is not None and again.id == indexed.id
    assert len(store.keyword_search([kb.id], "zebra", 10)) == 1
    assert [d.path for d in store.list_documents(kb.id, DocumentState.PENDING)] == ["a.md", "b.md"]


def test_states_move_and_unfinished_work_is_reset(store: Store) -> None:
    kb = store.create_kb("docs")
    store.mark_pending(kb.id, [new_doc(p) for p in ("a.md", "b.md", "c.md", "d.md")])
    store.set_document_state(kb.id, "a.md", DocumentState.EXTRACTING)
    store.set_document_state(kb.id, "b.md", DocumentState.CHUNKING)
    store.set_document_state(kb.id, "c.md", DocumentState.EMBEDDING)
    put(store, kb, "d.md", ["indexed"])
    assert store.reset_unfinished() == 3
    states = {d.path: d.state for d in store.list_documents(kb.id)}
    assert states == {
        "a.md": DocumentState.PENDING,
        "b.md": DocumentState.PENDING,
        "c.md": DocumentState.PENDING,
        "d.md": DocumentState.INDEXED,
    }
    assert store.reset_unfinished() == 0


def test_a_reset_may_leave_uploads_in_flight_alone(store: Store) -> None:
    """Over a shared store an upload being indexed is another process's job (held under its
    lease): a folder pass resets only files of folders."""
    kb = store.create_kb("docs")
    store.mark_pending(kb.id, [new_doc("folder.md")])
    store.set_document_state(kb.id, "folder.md", DocumentState.EXTRACTING)
    upload = store.create_upload(
        kb.id, dataclasses.replace(new_doc("uploads/x"), display_name="sealed")
    )
    store.set_document_state(kb.id, upload.path, DocumentState.EMBEDDING)
    assert store.reset_unfinished(uploads=False) == 1
    states = {d.path: d.state for d in store.list_documents(kb.id)}
    assert states == {"folder.md": DocumentState.PENDING, "uploads/x": DocumentState.EMBEDDING}
    assert store.reset_unfinished() == 1


def test_touch_remembers_a_new_modification_time(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    record, _ = put(store, kb, "a.md", ["zebra"])
    store.touch_document(kb.id, record.id, 42.0)
    store.touch_document(other.id, record.id, 99.0)  # another base's id changes nothing
    touched = store.get_document_by_id(kb.id, record.id)
    assert touched.mtime == 42.0 and touched.content_hash == record.content_hash
    assert touched.state is DocumentState.INDEXED


def test_find_document_looks_in_every_base(store: Store) -> None:
    kb = store.create_kb("docs")
    record, _ = put(store, kb, "a.md", ["zebra"])
    assert store.find_document(record.id) == store.get_document_by_id(kb.id, record.id)
    assert store.find_document("no-such-document") is None


def test_find_document_ids_by_the_start_of_the_id(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    a, _ = put(store, kb, "a.md", ["zebra"])
    b, _ = put(store, other, "b.md", ["zebra"])
    assert store.find_document_ids(a.id[:8]) == [a.id]  # in any base
    assert store.find_document_ids(b.id) == [b.id]
    assert store.find_document_ids("", limit=5) == sorted([a.id, b.id])
    assert store.find_document_ids("", limit=1) == [min(a.id, b.id)]
    assert store.find_document_ids("zz") == []  # ids are hex


def test_delete_documents_in_one_go_and_only_in_their_base(store: Store, backend: Backend) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    a, _ = put(store, kb, "a.md", ["zebra a"], vectors=unit(1)[None])
    b, _ = put(store, kb, "b.md", ["zebra b"])
    keep, _ = put(store, other, "c.md", ["zebra c"])
    store.delete_documents(kb.id, [a.id, b.id, keep.id])
    store.delete_documents(kb.id, [])
    assert store.list_documents(kb.id) == []
    assert store.keyword_search([kb.id], "zebra", 10) == []
    assert store.dense_search([kb.id], IDENTITY, unit(1), 10) == []
    assert [d.id for d in store.list_documents(other.id)] == [keep.id]
    backend.check_index(store)


# -- metrics -----------------------------------------------------------------------------------
def test_documents_are_counted_by_state_over_every_base(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    assert set(store.count_documents_by_state().values()) == {0}
    put(store, kb, "a.md", ["zebra"])
    put(store, other, "b.md", ["zebra"])
    store.record_failure(kb.id, new_doc("c.pdf"), "corrupt")
    store.mark_pending(other.id, [new_doc("d.md")])
    counts = store.count_documents_by_state()
    assert set(counts) == set(DocumentState)
    assert counts[DocumentState.INDEXED] == 2
    assert counts[DocumentState.FAILED] == counts[DocumentState.PENDING] == 1


def test_a_document_of_a_source_no_longer_followed_is_refused(store: Store, tmp_path: Path) -> None:
    """A pass that reads a folder while it is removed cannot leave its documents behind: the
    write is refused, and a pending mark for it records nothing."""
    kb = store.create_kb("docs")
    folder = tmp_path / "notes"
    folder.mkdir()
    source = store.add_source(kb.id, str(folder))
    document = dataclasses.replace(new_doc("notes/a.md", "alpha"), source_id=source.id)
    store.replace_document(kb.id, document, make_chunks(["alpha"]), None, None, SETTINGS_KEY)
    assert store.remove_source(kb.id, source.id) == 1
    with pytest.raises(SourceRemoved):
        store.replace_document(kb.id, document, make_chunks(["alpha"]), None, None, SETTINGS_KEY)
    with pytest.raises(SourceRemoved):
        store.record_failure(kb.id, document, "corrupt")
    store.mark_pending(kb.id, [document, new_doc("upload.md")])
    assert [d.path for d in store.list_documents(kb.id)] == ["upload.md"]
    assert store.keyword_search([kb.id], "alpha", 5) == []


def test_a_files_parts_are_listed_with_it_and_go_with_it(store: Store, backend: Backend) -> None:
    kb = store.create_kb("mail")
    other = store.create_kb("other")
    metadata: dict[str, str | tuple[str, ...]] = {
        "from": "ann@example.org",
        "to": ("bo@example.org", "cy@example.org"),
    }
    mail = dataclasses.replace(new_doc("inbox/m.eml", "Hello"), metadata=metadata)
    stored = store.replace_document(kb.id, mail, make_chunks(["hello"]), None, None, SETTINGS_KEY)
    assert stored.metadata == metadata and stored.container is None
    part = dataclasses.replace(new_doc("inbox/m.eml › a.pdf", "Report"), container="inbox/m.eml")
    store.replace_document(kb.id, part, make_chunks(["report"]), None, None, SETTINGS_KEY)
    broken = dataclasses.replace(new_doc("inbox/m.eml › b.pdf"), container="inbox/m.eml")
    store.record_failure(kb.id, broken, "corrupt")
    store.replace_document(other.id, part, make_chunks(["report"]), None, None, SETTINGS_KEY)
    assert [d.path for d in store.parts_of(kb.id, "inbox/m.eml")] == [
        "inbox/m.eml › a.pdf",
        "inbox/m.eml › b.pdf",
    ]
    assert store.parts_of(kb.id, "inbox/other.eml") == []
    assert store.get_document(kb.id, "inbox/m.eml") == stored
    store.delete_documents(kb.id, [stored.id])
    assert store.list_documents(kb.id) == []
    assert [d.path for d in store.list_documents(other.id)] == ["inbox/m.eml › a.pdf"]
    backend.check_index(store)
