"""The ``Chunks`` role: hydration, neighbours, document text. Run against every backend."""

from __future__ import annotations

import numpy as np
import pytest

from contract.store_contract import (
    IDENTITY,
    put,
    stored_ids,
    unit,
)
from lorebase.errors import NotFound
from lorebase.store.base import Store
from lorebase.store.sqlite import SqliteStore
from lorebase.types import ContentKind, Provenance


# -- hydration ---------------------------------------------------------------------------------
def test_get_chunks_hydrates_in_the_order_asked(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(
        store,
        kb,
        "src/a.py",
        ["zebra one", "zebra two"],
        title="A",
        symbol="f",
        trails=[("mod",), ("mod", "f")],
    )
    ids = stored_ids(doc.id, chunks)
    got = store.get_chunks([kb.id], [ids[1], "unknown", ids[0]])
    assert [c.id for c in got] == [ids[1], ids[0]]
    first = got[1]
    assert (first.ordinal, first.text, first.tokens) == (0, "zebra one", 2)
    assert first.provenance == Provenance(
        knowledge_base="docs",
        knowledge_base_id=kb.id,
        document_id=doc.id,
        path="src/a.py",
        title="A",
        kind="py",
        uploaded=False,
        trail=("mod",),
        start=0,
        end=9,
        content_kind=ContentKind.CODE,
        line=1,
        page=None,
        page_end=None,
        language="python",
        symbol="f",
    )
    assert got[0].provenance.trail == ("mod", "f")
    assert store.get_chunks([kb.id], []) == []


def test_neighbors_are_the_window_around_a_chunk(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(store, kb, "a.md", [f"zebra {i}" for i in range(6)])
    put(store, kb, "b.md", ["zebra elsewhere"])
    ids = stored_ids(doc.id, chunks)
    assert [c.ordinal for c in store.neighbors([kb.id], ids[3], 1)] == [2, 3, 4]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[0], 2)] == [0, 1, 2]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[5], 0)] == [5]
    assert {c.provenance.path for c in store.neighbors([kb.id], ids[5], 100)} == {"a.md"}
    with pytest.raises(NotFound):
        store.neighbors([kb.id], "unknown", 1)


def test_a_documents_chunks_page_in_order_and_stay_in_their_base(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    doc, chunks = put(store, kb, "a.md", [f"zebra {i}" for i in range(6)])
    put(store, kb, "b.md", ["zebra elsewhere"])
    assert [c.id for c in store.document_chunks(kb.id, doc.id, 0, 100)] == stored_ids(
        doc.id, chunks
    )
    assert [c.ordinal for c in store.document_chunks(kb.id, doc.id, 2, 3)] == [2, 3, 4]
    assert store.document_chunks(kb.id, doc.id, 6, 10) == []
    assert {c.provenance.path for c in store.document_chunks(kb.id, doc.id, 0, 100)} == {"a.md"}
    with pytest.raises(NotFound):  # a document of another base finds nothing
        store.document_chunks(other.id, doc.id, 0, 10)


def test_chunk_documents_names_each_chunks_document_within_the_bases(store: Store) -> None:
    kb = store.create_kb("docs")
    other = store.create_kb("other")
    a, _ = put(store, kb, "a.md", ["alpha one", "alpha two"])
    b, _ = put(store, kb, "b.md", ["beta"])
    put(store, other, "c.md", ["gamma"])
    found = {cid for cid, _ in store.keyword_search([kb.id, other.id], "alpha beta gamma", 10)}
    mapping = store.chunk_documents([kb.id], [*found, "0" * 32])
    assert sorted(mapping.values()) == sorted([a.id, a.id, b.id])
    assert set(mapping) < found  # gamma's chunk is another base's; the unknown id is gone
    assert store.chunk_documents([kb.id], []) == {}
    assert store.chunk_documents([], list(found)) == {}


def test_chunk_documents_stay_true_while_vectors_searched_in_memory_change(store: Store) -> None:
    """A backend may answer from what its vector search keeps in memory: the answer is the
    rows' through a search of the vectors, a document replaced or deleted since (a chunk
    gone is named by no document), and a document that has no vectors yet."""
    kb = store.create_kb("docs")
    a, a_chunks = put(
        store, kb, "a.md", ["alpha one", "alpha two"], vectors=np.stack([unit(1), unit(2)])
    )
    b, b_chunks = put(store, kb, "b.md", ["beta"], vectors=np.stack([unit(3)]))
    c, c_chunks = put(store, kb, "c.md", ["gamma"])  # keyword only: no vectors yet
    every = stored_ids(a.id, a_chunks) + stored_ids(b.id, b_chunks) + stored_ids(c.id, c_chunks)
    expected = dict.fromkeys(stored_ids(a.id, a_chunks), a.id)
    expected |= {**dict.fromkeys(stored_ids(b.id, b_chunks), b.id)}
    expected |= dict.fromkeys(stored_ids(c.id, c_chunks), c.id)
    assert store.chunk_documents([kb.id], every) == expected
    store.dense_search([kb.id], IDENTITY, unit(1), 10)  # the vectors in memory, if kept
    assert store.chunk_documents([kb.id], every) == expected
    store.delete_document(kb.id, b.id)
    gone = {chunk_id: doc for chunk_id, doc in expected.items() if doc != b.id}
    assert store.chunk_documents([kb.id], every) == gone  # before the next vector search
    store.dense_search([kb.id], IDENTITY, unit(1), 10)
    assert store.chunk_documents([kb.id], every) == gone
    d, d_chunks = put(store, kb, "b.md", ["beta again"], vectors=np.stack([unit(4)]))
    store.dense_search([kb.id], IDENTITY, unit(1), 10)
    more = every + stored_ids(d.id, d_chunks)
    assert store.chunk_documents([kb.id], more) == gone | dict.fromkeys(
        stored_ids(d.id, d_chunks), d.id
    )
    assert store.chunk_documents([kb.id + 1000], more) == {}
    if isinstance(store, SqliteStore):  # answered from its vectors in memory, c's read
        with store._reading() as tx:
            known = store._known_documents(tx, [kb.id], more)
        assert known == {k: v for k, v in store.chunk_documents([kb.id], more).items() if v != c.id}
