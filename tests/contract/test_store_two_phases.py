"""A document written in two steps: its chunks first (found by keyword, awaiting vectors),
then their vectors. Run against every backend."""

from __future__ import annotations

import numpy as np
import pytest

from contract.store_contract import (
    IDENTITY,
    SETTINGS_KEY,
    Backend,
    ids_of,
    make_chunks,
    new_doc,
    put,
    stored_ids,
    unit,
)
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.store.base import DocumentRecord, DocumentVectors, KnowledgeBase, Store
from lorebase.store.states import DocumentState
from lorebase.types import Chunk


def stage(
    store: Store, kb: KnowledgeBase, path: str, texts: list[str]
) -> tuple[DocumentRecord, list[Chunk]]:
    chunks = make_chunks(texts, salt=path)
    record = store.replace_document(
        kb.id,
        new_doc(path, "\n\n".join(texts)),
        chunks,
        None,
        None,
        SETTINGS_KEY,
        awaiting_vectors=True,
    )
    return record, chunks


def test_chunks_awaiting_vectors_are_found_by_keyword_only_until_their_vectors(
    store: Store,
) -> None:
    kb = store.create_kb("docs")
    store.set_kb_identity(kb.id, IDENTITY)
    record, chunks = stage(store, kb, "a.md", ["zebra one", "tulip two"])
    assert (record.state, record.identity_key, record.chunk_count) == (
        DocumentState.EMBEDDING,
        None,
        2,
    )
    assert ids_of(store.keyword_search([kb.id], "zebra", 10)) == stored_ids(record.id, chunks)[:1]
    assert store.dense_search([kb.id], IDENTITY, unit(1), 10) == []
    assert store.count_keyword_only([kb.id]) == 1
    totals = store.get_kb_by_id(kb.id)
    assert (totals.searchable, totals.embedded, totals.chunks, totals.embedded_chunks) == (
        1,
        0,
        2,
        0,
    )

    store.add_vectors(kb.id, record.id, chunks, np.stack([unit(1), unit(2)]), IDENTITY)
    done = store.get_document_by_id(kb.id, record.id)
    assert (done.state, done.identity_key) == (DocumentState.INDEXED, IDENTITY.key)
    assert ids_of(store.dense_search([kb.id], IDENTITY, unit(2), 1)) == [
        stored_ids(record.id, chunks)[1]
    ]
    assert store.count_keyword_only([kb.id]) == 0
    totals = store.get_kb_by_id(kb.id)
    assert (totals.searchable, totals.embedded, totals.embedded_chunks) == (1, 1, 2)
    assert set(store.cached_vectors(IDENTITY, [c.content_hash for c in chunks])) == {
        c.content_hash for c in chunks
    }


def test_a_new_version_replaces_the_old_chunks_and_their_vectors_at_once(store: Store) -> None:
    kb = store.create_kb("docs")
    store.set_kb_identity(kb.id, IDENTITY)
    old, _ = put(store, kb, "a.md", ["zebra old"], vectors=unit(1)[None])
    record, chunks = stage(store, kb, "a.md", ["tulip new", "tulip newer"])
    assert record.id == old.id
    assert store.keyword_search([kb.id], "zebra", 10) == []
    assert len(store.keyword_search([kb.id], "tulip", 10)) == 2
    assert store.dense_search([kb.id], IDENTITY, unit(1), 10) == []  # the old vectors went
    assert store.count_keyword_only([kb.id]) == 1
    # A crash here: the next start resets it to pending, still found by keyword and counted.
    assert store.reset_unfinished() == 1
    assert store.get_document_by_id(kb.id, record.id).state is DocumentState.PENDING
    assert len(store.keyword_search([kb.id], "tulip", 10)) == 2
    assert store.count_keyword_only([kb.id]) == 1
    store.add_vectors(kb.id, record.id, chunks, np.stack([unit(2), unit(3)]), IDENTITY)
    assert store.count_keyword_only([kb.id]) == 0


def test_the_keyword_only_count_is_scoped_by_base_and_ends_with_a_failure(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    stage(store, kb, "a.md", ["zebra"])
    stage(store, kb, "b.md", ["tulip"])
    stage(store, other, "c.md", ["zebra"])
    put(store, kb, "d.md", ["indexed"], vectors=unit(1)[None])
    put(store, kb, "e.md", [])  # no chunks: found by nothing
    assert store.count_keyword_only([kb.id]) == 2
    assert store.count_keyword_only([kb.id, other.id]) == 3
    assert store.count_keyword_only([]) == 0
    store.record_failure(kb.id, new_doc("a.md", "zebra"), "corrupt")
    assert store.count_keyword_only([kb.id]) == 1
    store.delete_kb(other.id)
    assert store.count_keyword_only([other.id]) == 0


def test_awaiting_vectors_refuses_vectors_and_changes_nothing(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra old"], vectors=unit(1)[None])
    with pytest.raises(InvalidInput):
        store.replace_document(
            kb.id,
            new_doc("a.md", "tulip"),
            make_chunks(["tulip"], salt="a.md"),
            unit(2)[None],
            IDENTITY,
            SETTINGS_KEY,
            awaiting_vectors=True,
        )
    assert len(store.keyword_search([kb.id], "zebra", 10)) == 1
    stored = store.get_document(kb.id, "a.md")
    assert stored is not None and stored.state is DocumentState.INDEXED


def test_vectors_for_a_document_gone_or_rewritten_are_refused(
    store: Store, backend: Backend
) -> None:
    kb = store.create_kb("docs")
    record, chunks = stage(store, kb, "a.md", ["zebra one"])
    stage(store, kb, "a.md", ["zebra rewritten"])  # another writer got there first
    with pytest.raises(Conflict):
        store.add_vectors(kb.id, record.id, chunks, unit(1)[None], IDENTITY)
    store.delete_document(kb.id, record.id)
    with pytest.raises(NotFound):
        store.add_vectors(kb.id, record.id, chunks, unit(1)[None], IDENTITY)
    assert backend.row_counts(store)["chunks"] == 0


def test_vectors_of_several_documents_in_one_write_skip_the_ones_gone_or_rewritten(
    store: Store,
) -> None:
    kb = store.create_kb("docs")
    store.set_kb_identity(kb.id, IDENTITY)
    kept, kept_chunks = stage(store, kb, "a.md", ["zebra one", "zebra two"])
    gone, gone_chunks = stage(store, kb, "b.md", ["tulip"])
    rewritten, old_chunks = stage(store, kb, "c.md", ["walrus"])
    store.delete_document(kb.id, gone.id)
    stage(store, kb, "c.md", ["walrus rewritten"])
    written = store.add_vectors_many(
        kb.id,
        [
            DocumentVectors(kept.id, kept_chunks, np.stack([unit(1), unit(2)])),
            DocumentVectors(gone.id, gone_chunks, unit(3)[None]),
            DocumentVectors(rewritten.id, old_chunks, unit(4)[None]),
        ],
        IDENTITY,
    )
    assert written == [kept.id]
    assert store.get_document_by_id(kb.id, kept.id).state is DocumentState.INDEXED
    assert store.get_document_by_id(kb.id, rewritten.id).state is DocumentState.EMBEDDING
    assert (
        ids_of(store.dense_search([kb.id], IDENTITY, unit(2), 10))
        == stored_ids(kept.id, kept_chunks)[::-1]
    )
    assert store.count_keyword_only([kb.id]) == 1  # the rewritten one
    assert store.add_vectors_many(kb.id, [], IDENTITY) == []
    with pytest.raises(InvalidInput):  # checked before anything is written
        store.add_vectors_many(
            kb.id, [DocumentVectors(rewritten.id, old_chunks, unit(4)[None, :4])], IDENTITY
        )
