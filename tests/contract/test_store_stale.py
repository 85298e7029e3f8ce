"""Documents an older version made (stale): ``count_stale`` and ``list_stale`` of the
``Documents`` role agree with :meth:`RunningVersions.stale`, count a document that recorded
no versions (made before they were recorded) as stale, and leave pending ones out. Run against
every backend."""

from __future__ import annotations

import dataclasses

from contract.store_contract import IDENTITY, SETTINGS_KEY, make_chunks, new_doc, unit
from lorebase.store.base import DocumentRecord, KnowledgeBase, NewDocument, RunningVersions, Store
from lorebase.store.states import DocumentState

RUNNING = RunningVersions({"md": "x2.c3.a1", "pdf": "x5.c3.a1"}, "x0.c3.a1")
"""What this test's "running" release records: by kind, and for a kind no format gives."""
OLDER = "x1.c3.a1"


def _doc(path: str, versions: str | None) -> NewDocument:
    return dataclasses.replace(new_doc(path, f"text of {path}"), versions=versions)


def _indexed(store: Store, kb: KnowledgeBase, path: str, versions: str | None) -> DocumentRecord:
    chunks = make_chunks([f"passage of {path}"], salt=path)
    return store.replace_document(
        kb.id, _doc(path, versions), chunks, unit(len(path))[None], IDENTITY, SETTINGS_KEY
    )


def _failed(store: Store, kb: KnowledgeBase, path: str, versions: str | None) -> DocumentRecord:
    return store.record_failure(kb.id, _doc(path, versions), "corrupt")


def _a_base_of_every_case(store: Store, name: str) -> tuple[KnowledgeBase, set[str]]:
    """A base with one document of each case; the paths of the stale ones."""
    kb = store.create_kb(name)
    _indexed(store, kb, "now.md", RUNNING.of("md"))
    _indexed(store, kb, "never.md", None)  # made before versions were recorded
    _indexed(store, kb, "older.md", OLDER)
    _indexed(store, kb, "other-kind.md", RUNNING.of("pdf"))  # a key, but another kind's
    _indexed(store, kb, "unknown.xyz", RUNNING.other)  # a kind no format gives: `other`
    _indexed(store, kb, "unknown-old.xyz", OLDER)
    _failed(store, kb, "failed-now.pdf", RUNNING.of("pdf"))
    _failed(store, kb, "failed-never.pdf", None)
    store.mark_pending(kb.id, [_doc("waiting.md", None)])  # not settled: not stale yet
    stale = {"never.md", "older.md", "other-kind.md", "unknown-old.xyz", "failed-never.pdf"}
    return kb, stale


def test_versions_round_trip_through_every_write(store: Store) -> None:
    kb = store.create_kb("docs")
    assert _indexed(store, kb, "a.md", "x2.c3.a1").versions == "x2.c3.a1"
    assert _failed(store, kb, "b.pdf", "x5.c3.a1").versions == "x5.c3.a1"
    assert _indexed(store, kb, "c.md", None).versions is None
    found = {d.path: d.versions for d in store.list_documents(kb.id)}
    assert found == {"a.md": "x2.c3.a1", "b.pdf": "x5.c3.a1", "c.md": None}


def test_count_and_list_stale_agree_with_running_versions(store: Store) -> None:
    kb, stale = _a_base_of_every_case(store, "docs")
    documents = store.list_documents(kb.id)
    assert {d.path for d in documents if RUNNING.stale(d)} == stale
    assert store.count_stale(RUNNING) == {kb.id: len(stale)}
    listed = store.list_stale(RUNNING, 100)
    assert [d.path for d in listed] == sorted(stale)
    assert all(RUNNING.stale(d) and d.kb_id == kb.id for d in listed)


def test_documents_without_versions_are_stale(store: Store) -> None:
    """A base made before versions were recorded: every settled document is stale."""
    kb = store.create_kb("old")
    for n in range(3):
        _indexed(store, kb, f"n{n}.md", None)
    _failed(store, kb, "broken.pdf", None)
    assert store.count_stale(RUNNING) == {kb.id: 4}
    assert len(store.list_stale(RUNNING, 10)) == 4
    # Read again by the running release: none left.
    for n in range(3):
        _indexed(store, kb, f"n{n}.md", RUNNING.of("md"))
    _failed(store, kb, "broken.pdf", RUNNING.of("pdf"))
    assert store.count_stale(RUNNING) == {}
    assert store.list_stale(RUNNING, 10) == []


def test_stale_by_base_and_limited(store: Store) -> None:
    first, first_stale = _a_base_of_every_case(store, "first")
    second, second_stale = _a_base_of_every_case(store, "second")
    clean = store.create_kb("clean")
    _indexed(store, clean, "now.md", RUNNING.of("md"))
    expected = {first.id: len(first_stale), second.id: len(second_stale)}
    assert store.count_stale(RUNNING) == expected
    assert store.count_stale(RUNNING, [second.id, clean.id]) == {second.id: len(second_stale)}
    assert store.count_stale(RUNNING, []) == {}
    only_second = store.list_stale(RUNNING, 100, [second.id])
    assert {d.kb_id for d in only_second} == {second.id}
    assert [d.path for d in only_second] == sorted(second_stale)
    # By base, then path; the limit cuts that order.
    every = store.list_stale(RUNNING, 100)
    assert [(d.kb_id, d.path) for d in every] == sorted((d.kb_id, d.path) for d in every)
    assert store.list_stale(RUNNING, 3) == every[:3]
    assert store.list_stale(RUNNING, 0) == []


def test_a_release_that_changes_one_kind_makes_only_that_kind_stale(store: Store) -> None:
    kb = store.create_kb("docs")
    _indexed(store, kb, "a.md", RUNNING.of("md"))
    _failed(store, kb, "b.pdf", RUNNING.of("pdf"))
    assert store.count_stale(RUNNING) == {}
    newer_pdf = RunningVersions({**RUNNING.by_kind, "pdf": "x6.c3.a1"}, RUNNING.other)
    assert [d.path for d in store.list_stale(newer_pdf, 10)] == ["b.pdf"]
    assert store.list_stale(newer_pdf, 10)[0].state is DocumentState.FAILED
    newer_chunker = RunningVersions(
        {kind: key.replace(".c3.", ".c4.") for kind, key in RUNNING.by_kind.items()}, "x0.c4.a1"
    )
    assert store.count_stale(newer_chunker) == {kb.id: 2}
