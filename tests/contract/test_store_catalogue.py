"""The ``Catalogue`` role: knowledge bases, their settings, state and sources. Run against
every backend."""

from __future__ import annotations

from dataclasses import replace

import pytest
from store_contract import (
    IDENTITY,
    new_doc,
    put,
)

from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store.base import Scope, Store


# -- knowledge bases ---------------------------------------------------------------------------
def test_create_get_list_and_delete_knowledge_bases(store: Store) -> None:
    settings_ = ChunkSettings(chunk_size=800, max_tokens=200, overlap=100)
    kb = store.create_kb(
        "team-docs",
        description="Team docs",
        scope=Scope.TEAM,
        owner="ana",
        chunk_settings=settings_,
    )
    assert (kb.name, kb.description, kb.scope, kb.owner) == (
        "team-docs",
        "Team docs",
        "team",
        "ana",
    )
    assert kb.chunk_settings == settings_ and kb.identity_key is None
    assert (kb.documents, kb.chunks, kb.bytes) == (0, 0, 0)
    other = store.create_kb("alpha")
    assert other.chunk_settings == ChunkSettings() and other.scope is Scope.PERSONAL
    assert store.get_kb("team-docs") == kb
    assert store.get_kb_by_id(kb.id) == kb
    assert [k.name for k in store.list_kbs()] == ["alpha", "team-docs"]
    store.delete_kb(kb.id)
    assert [k.name for k in store.list_kbs()] == ["alpha"]
    with pytest.raises(NotFound):
        store.get_kb("team-docs")


def test_bases_without_totals_are_the_same_bases_with_zeros(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra one", "zebra two"])
    full, bare = store.get_kb("docs"), store.get_kb("docs", totals=False)
    assert (full.documents, full.chunks) == (1, 2)
    assert replace(full, documents=0, indexed=0, failed=0, chunks=0, bytes=0, pending=0) == bare
    assert store.get_kb_by_id(kb.id, totals=False) == bare
    assert store.list_kbs(totals=False) == [bare]
    with pytest.raises(NotFound):
        store.get_kb("missing", totals=False)


def test_duplicate_name_conflicts_and_unknown_bases_are_not_found(store: Store) -> None:
    kb = store.create_kb("docs")
    with pytest.raises(Conflict):
        store.create_kb("docs")
    with pytest.raises(InvalidInput):
        store.create_kb("  ")
    with pytest.raises(InvalidInput):
        store.create_kb("other", scope="everyone")  # type: ignore[arg-type]
    for call in (
        lambda: store.get_kb("nope"),
        lambda: store.get_kb_by_id(kb.id + 100),
        lambda: store.delete_kb(kb.id + 100),
        lambda: store.set_kb_identity(kb.id + 100, IDENTITY),
        lambda: store.replace_document(kb.id + 100, new_doc("a.md"), [], None, None, "k"),
        lambda: store.record_failure(kb.id + 100, new_doc("a.md"), "corrupt"),
    ):
        with pytest.raises(NotFound):
            call()


def test_totals_and_identity(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["one zebra", "two", "three"])
    put(store, kb, "b.md", ["four"])
    store.record_failure(kb.id, new_doc("c.pdf", size=7), "no_text_layer")
    store.set_kb_identity(kb.id, IDENTITY)
    kb = store.get_kb("docs")
    assert (kb.documents, kb.indexed, kb.failed, kb.chunks, kb.bytes) == (3, 2, 1, 4, 207)
    assert kb.identity_key == IDENTITY.key
    assert store.list_kbs() == [kb]
