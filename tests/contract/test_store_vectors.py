"""The ``Vectors`` role: dense search, the reuse cache, identity switches. Run against every
backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from contract.store_contract import (
    DIM,
    IDENTITY,
    OTHER_IDENTITY,
    Backend,
    assert_stored_vector,
    ids_of,
    make_chunks,
    new_doc,
    put,
    stored_ids,
    unit,
)
from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.store.base import Store


# -- dense search ------------------------------------------------------------------------------
def test_dense_search_finds_a_stored_vector_first(store: Store) -> None:
    kb = store.create_kb("docs")
    vectors = np.stack([unit(i) for i in range(20)])
    put(store, kb, "a.md", [f"chunk {i}" for i in range(20)], vectors=vectors)
    for i in (0, 7, 19):
        hits = store.dense_search([kb.id], IDENTITY, vectors[i], 3)
        assert store.get_chunks([kb.id], [hits[0][0]])[0].text == f"chunk {i}"
        assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    with pytest.raises(InvalidInput):
        store.dense_search([kb.id], IDENTITY, np.ones(DIM + 1, np.float32), 3)
    assert store.dense_search([kb.id], IDENTITY, vectors[0], 0) == []


def test_dense_search_keeps_identities_apart(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["under identity a"], vectors=unit(1)[None], identity=IDENTITY)
    put(store, kb, "b.md", ["under identity b"], vectors=unit(1)[None], identity=OTHER_IDENTITY)
    (hit,) = store.dense_search([kb.id], IDENTITY, unit(1), 10)
    assert store.get_chunks([kb.id], [hit[0]])[0].provenance.path == "a.md"
    (hit,) = store.dense_search([kb.id], OTHER_IDENTITY, unit(1), 10)
    assert store.get_chunks([kb.id], [hit[0]])[0].provenance.path == "b.md"
    unknown = EmbedderIdentity(model="never-used", digest="c" * 64, dim=DIM)
    assert store.dense_search([kb.id], unknown, unit(1), 10) == []


def test_dense_search_sees_writes_made_after_a_search(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["first"], vectors=unit(1)[None])
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1
    put(store, kb, "b.md", ["second"], vectors=unit(2)[None])
    hits = store.dense_search([kb.id], IDENTITY, unit(2), 10)
    assert len(hits) == 2
    assert store.get_chunks([kb.id], [hits[0][0]])[0].text == "second"
    doc = store.get_document(kb.id, "b.md")
    assert doc is not None
    store.delete_document(kb.id, doc.id)
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "delete", "fail", "other-process"]),
        st.integers(0, 5),  # which document
        st.integers(1, 4),  # how many chunks
        st.integers(0, 10_000),  # vector seed
    ),
    min_size=1,
    max_size=25,
)


def test_dense_results_after_any_writes_equal_a_fresh_load(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """However the in-memory index catches up with writes (here or in another process),
    every search answers exactly what a store opened afresh answers."""

    @settings(max_examples=examples(backend.examples(40)), deadline=None)
    @given(operations=OPERATIONS)
    def check(operations: list[tuple[str, int, int, int]]) -> None:
        folder = tmp_path_factory.mktemp("dense")
        store, other = backend.open(folder), backend.open(folder)
        try:
            kb = store.create_kb("docs")
            query = unit(99)
            for action, doc, count, seed in operations:
                path = f"d{doc}.md"
                writer = other if action == "other-process" else store
                if action in ("put", "other-process"):
                    vectors = np.stack([unit(seed + i) for i in range(count)])
                    texts = [f"text {seed} {i}" for i in range(count)]
                    put(writer, kb, path, texts, vectors=vectors)
                elif action == "fail":
                    store.record_failure(kb.id, new_doc(path), "corrupt")
                elif (found := store.get_document(kb.id, path)) is not None:
                    store.delete_document(kb.id, found.id)
                subset = [d.id for d in store.list_documents(kb.id)][:2]
                fresh = backend.open(folder)
                try:
                    expected = fresh.dense_search([kb.id], IDENTITY, query, 100)
                    expected_subset = fresh.dense_search([kb.id], IDENTITY, query, 100, subset)
                finally:
                    fresh.close()
                got = store.dense_search([kb.id], IDENTITY, query, 100)
                assert sorted(got) == sorted(expected)
                got_subset = store.dense_search([kb.id], IDENTITY, query, 100, subset)
                assert sorted(got_subset) == sorted(expected_subset)
        finally:
            store.close()
            other.close()

    check()


def test_dense_search_filters_documents_and_merges_bases(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    doc1, _ = put(store, a, "1.md", ["a1", "a2"], vectors=np.stack([unit(1), unit(2)]))
    doc2, _ = put(store, a, "2.md", ["a3"], vectors=unit(3)[None])
    put(store, b, "3.md", ["b1"], vectors=unit(4)[None])
    hits = store.dense_search([a.id], IDENTITY, unit(1), 10, [doc2.id])
    assert [c.text for c in store.get_chunks([a.id], ids_of(hits))] == ["a3"]
    assert store.dense_search([a.id], IDENTITY, unit(1), 10, []) == []
    assert store.dense_search([a.id], IDENTITY, unit(1), 10, ["unknown"]) == []
    assert len(store.dense_search([a.id], IDENTITY, unit(1), 10, [doc1.id, doc2.id])) == 3
    merged = store.dense_search([a.id, b.id], IDENTITY, unit(4), 2)
    assert store.get_chunks([a.id, b.id], [merged[0][0]])[0].text == "b1"
    assert len(merged) == 2 and merged[0][1] >= merged[1][1]


# -- embedding reuse ---------------------------------------------------------------------------
def test_cached_vectors_round_trip_while_a_chunk_holds_them(store: Store, backend: Backend) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    texts = [f"text {i}" for i in range(600)]  # more hashes than one IN list holds
    vectors = np.stack([unit(i) for i in range(600)])
    doc, chunks = put(store, kb, "a.md", texts, vectors=vectors)
    hashes = [c.content_hash for c in chunks]
    cached = store.cached_vectors(IDENTITY, [*hashes, "missing", hashes[0]])
    assert set(cached) == set(hashes)
    assert_stored_vector(cached[hashes[599]], vectors[599])
    assert store.cached_vectors(OTHER_IDENTITY, hashes) == {}
    assert store.cached_vectors(IDENTITY, []) == {}
    # A copy in another base keeps its content's vector after the first goes.
    put(store, other, "copy.md", texts[:1], vectors=vectors[:1])
    store.delete_document(kb.id, doc.id)
    after = store.cached_vectors(IDENTITY, hashes)
    assert_stored_vector(after[hashes[0]], vectors[0])
    assert len(after) == (600 if backend.reuse_outlives_chunks else 1)


def test_a_reused_vector_is_stored_as_it_was_found(store: Store) -> None:
    """Reading a stored vector and writing it again changes nothing: a vector reused across
    many re-syncs never drifts from the one first embedded."""
    kb = store.create_kb("docs")
    _, chunks = put(store, kb, "a.md", ["alpha"], vectors=unit(7)[None, :])
    first = store.cached_vectors(IDENTITY, [chunks[0].content_hash])[chunks[0].content_hash]
    put(store, kb, "b.md", ["alpha"], vectors=first[None, :])
    stored = store.get_document(kb.id, "a.md")
    assert stored is not None
    store.delete_document(kb.id, stored.id)
    again = store.cached_vectors(IDENTITY, [chunks[0].content_hash])[chunks[0].content_hash]
    np.testing.assert_array_equal(again, first)


# -- identity switches -------------------------------------------------------------------------
def test_vectors_of_a_new_identity_wait_beside_the_old_until_the_switch(store: Store) -> None:
    kb = store.create_kb("docs")
    store.set_kb_identity(kb.id, IDENTITY)
    record, chunks = put(
        store, kb, "a.md", ["zebra one", "zebra two"], vectors=np.stack([unit(1), unit(2)])
    )
    new = np.stack([unit(3), unit(4)])
    store.add_vectors(kb.id, record.id, chunks, new, OTHER_IDENTITY)
    assert store.get_document_by_id(kb.id, record.id).identity_key == OTHER_IDENTITY.key
    assert len(store.dense_search([kb.id], IDENTITY, unit(1), 10)) == 2  # both kept
    assert ids_of(store.dense_search([kb.id], OTHER_IDENTITY, unit(4), 1)) == [
        stored_ids(record.id, chunks)[1]
    ]
    assert store.switch_kb_embedder(kb.id, OTHER_IDENTITY, None)  # the switch purges
    assert store.dense_search([kb.id], IDENTITY, unit(1), 10) == []
    assert len(store.dense_search([kb.id], OTHER_IDENTITY, unit(3), 10)) == 2


def test_add_vectors_refuses_chunks_that_changed(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    record, chunks = put(store, kb, "a.md", ["zebra one", "zebra two"])
    changed = make_chunks(["zebra one", "zebra changed"], salt="a.md")
    with pytest.raises(Conflict):
        store.add_vectors(kb.id, record.id, changed, np.stack([unit(1), unit(2)]), OTHER_IDENTITY)
    with pytest.raises(NotFound):
        store.add_vectors(other.id, record.id, chunks, np.stack([unit(1), unit(2)]), OTHER_IDENTITY)
    with pytest.raises(InvalidInput):
        store.add_vectors(kb.id, record.id, chunks, unit(1)[None], OTHER_IDENTITY)
    assert store.dense_search([kb.id], OTHER_IDENTITY, unit(1), 10) == []


# -- the cosines of given chunks ----------------------------------------------------------------
def test_dense_scores_are_the_cosines_dense_search_gives(store: Store) -> None:
    kb = store.create_kb("docs")
    other = store.create_kb("other")
    vectors = np.stack([unit(i) for i in range(6)])
    put(store, kb, "a.md", [f"chunk {i}" for i in range(6)], vectors=vectors)
    put(store, other, "b.md", ["elsewhere"], vectors=unit(9)[None])
    put(store, kb, "c.md", ["no vector yet"])
    query = unit(3)
    ranked = dict(store.dense_search([kb.id], IDENTITY, query, 6))
    scores = store.dense_scores([kb.id], IDENTITY, query, list(ranked))
    assert scores.keys() == ranked.keys()
    for chunk_id, score in ranked.items():
        assert scores[chunk_id] == pytest.approx(score, abs=1e-5)
    # Another base's chunk, a chunk without a vector, an unknown id, another identity: absent.
    foreign = ids_of(store.dense_search([other.id], IDENTITY, query, 1))
    bare = ids_of(store.keyword_search([kb.id], "vector", 5))
    asked = [*foreign, *bare, "f" * 32]
    assert store.dense_scores([kb.id], IDENTITY, query, asked) == {}
    assert store.dense_scores([kb.id], OTHER_IDENTITY, query, list(ranked)) == {}
    assert store.dense_scores([kb.id], IDENTITY, query, []) == {}


def test_dense_scores_follow_a_document_written_again_and_deleted(store: Store) -> None:
    """A cosine is the current vector's: a document indexed again with the same passages
    (the same chunk ids, new vectors) after a search loaded the old ones, then deleted."""
    kb = store.create_kb("docs")
    texts = [f"passage {i}" for i in range(4)]
    put(store, kb, "a.md", texts, vectors=np.stack([unit(i) for i in range(4)]))
    put(store, kb, "b.md", ["stays"], vectors=unit(7)[None])
    query = unit(2)
    before = dict(store.dense_search([kb.id], IDENTITY, query, 10))
    assert store.dense_scores([kb.id], IDENTITY, query, list(before)) == pytest.approx(before)
    put(store, kb, "a.md", texts, vectors=np.stack([unit(10 + i) for i in range(4)]))
    after = dict(store.dense_search([kb.id], IDENTITY, query, 10))
    assert after.keys() == before.keys()
    scores = store.dense_scores([kb.id], IDENTITY, query, list(after))
    assert scores.keys() == after.keys()
    for chunk_id, score in after.items():
        assert scores[chunk_id] == pytest.approx(score, abs=1e-5)
    doc = store.get_document(kb.id, "a.md")
    assert doc is not None
    store.delete_document(kb.id, doc.id)
    left = dict(store.dense_search([kb.id], IDENTITY, query, 10))
    assert store.dense_scores([kb.id], IDENTITY, query, list(after)).keys() == left.keys()
