"""The ``Catalogue`` role: knowledge bases, their settings, state and sources. Run against
every backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from contract.store_contract import (
    DIM,
    IDENTITY,
    OTHER_IDENTITY,
    SETTINGS_KEY,
    new_doc,
    put,
)
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store.base import MAX_SOURCES, DocumentVectors, KnowledgeBase, Store
from lorebase.store.states import KbState, Scope


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


def test_names_are_unique_per_scope_not_overall(store: Store) -> None:
    alice = store.create_kb("notes", owner="alice")
    bob = store.create_kb("notes", owner="bob")
    admins = store.create_kb("notes")  # no owner: the administrators'
    team_1 = store.create_kb("notes", scope=Scope.TEAM, owner="alice", team_id=1)
    team_2 = store.create_kb("notes", scope=Scope.TEAM, owner="bob", team_id=2)
    shared = store.create_kb("notes", scope=Scope.GLOBAL, owner="admin")
    clashes: list[tuple[Callable[[], KnowledgeBase], str]] = [
        (lambda: store.create_kb("notes", owner="alice"), "personal knowledge base of yours"),
        (lambda: store.create_kb("notes"), "administrators"),
        (lambda: store.create_kb("notes", scope=Scope.TEAM, owner="bob", team_id=1), "team"),
        (lambda: store.create_kb("notes", scope=Scope.GLOBAL, owner="root"), "global"),
    ]
    held = [alice, admins, team_1, shared]
    for (call, whose), base in zip(clashes, held, strict=True):
        with pytest.raises(Conflict, match=whose) as raised:
            call()
        # The message names the one base of that scope, and no other.
        assert f"(id {base.id})" in str(raised.value)
        others = {alice.id, bob.id, admins.id, team_1.id, team_2.id, shared.id} - {base.id}
        assert not any(f"id {other})" in str(raised.value) for other in others)
    bases = [alice, bob, admins, team_1, team_2, shared]
    assert [kb.id for kb in store.kbs_named("notes")] == [kb.id for kb in bases]
    assert store.kbs_named("other") == []
    # Totals only when asked.
    put(store, bob, "a.md", ["zebra one"])
    assert [kb.documents for kb in store.kbs_named("notes", totals=True)] == [0, 1, 0, 0, 0, 0]
    # The operator's lookup by name refuses to guess, listing every base of the name.
    with pytest.raises(InvalidInput, match="give the id") as ambiguous:
        store.get_kb("notes")
    for kb in bases:
        assert f"{kb.id} (" in str(ambiguous.value)
    assert "personal, alice" in str(ambiguous.value) and "team 2" in str(ambiguous.value)
    # Once the others are gone, the name is unambiguous again.
    for kb in bases[1:]:
        store.delete_kb(kb.id)
    assert store.get_kb("notes").id == alice.id


def test_team_bases_without_a_team_share_one_namespace(store: Store) -> None:
    store.create_kb("loose", scope=Scope.TEAM)
    with pytest.raises(Conflict):
        store.create_kb("loose", scope=Scope.TEAM)
    # A user's personal bases and the administrators' (no owner) are two namespaces.
    store.create_kb("mine", owner="dana")
    assert store.create_kb("mine").owner is None


def test_bases_without_totals_are_the_same_bases_with_zeros(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra one", "zebra two"])
    full, bare = store.get_kb("docs"), store.get_kb("docs", totals=False)
    assert (full.documents, full.chunks) == (1, 2)
    zeros = replace(
        full,
        documents=0,
        indexed=0,
        failed=0,
        chunks=0,
        bytes=0,
        pending=0,
        searchable=0,
        embedded=0,
        embedded_chunks=0,
    )
    assert zeros == bare
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
        lambda: store.switch_kb_embedder(kb.id + 100, IDENTITY, "a"),
        lambda: store.set_kb_embedder_target(kb.id + 100, "a"),
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


def test_a_base_records_its_embedder_and_a_reembed_switches_it_in_one_write(store: Store) -> None:
    kb = store.create_kb("docs", embedder="small")
    plain = store.create_kb("plain")
    assert (kb.embedder, kb.embedder_next, plain.embedder) == ("small", None, None)
    store.switch_kb_embedder(kb.id, IDENTITY, "small")  # the first pass: nothing to switch
    store.set_kb_embedder_target(kb.id, "large")
    kb = store.get_kb_by_id(kb.id)
    assert (kb.identity_key, kb.embedder, kb.embedder_next) == (IDENTITY.key, "small", "large")
    # A pass that ends with vectors of another name leaves the re-embed asked for.
    store.switch_kb_embedder(kb.id, IDENTITY, "small")
    assert store.get_kb_by_id(kb.id).embedder_next == "large"
    store.switch_kb_embedder(kb.id, OTHER_IDENTITY, "large")
    kb = store.get_kb_by_id(kb.id)
    assert (kb.identity_key, kb.embedder, kb.embedder_next) == (OTHER_IDENTITY.key, "large", None)
    # Back to the process's own embedder (no name) is a re-embed like any other.
    store.set_kb_embedder_target(kb.id, None)
    assert store.get_kb_by_id(kb.id).embedder_next is None
    assert store.get_kb_by_id(plain.id).embedder is None


def test_a_named_base_takes_only_its_own_models_vectors_and_switches_only_when_whole(
    store: Store,
) -> None:
    """A pass (or an upload) that read the base before a re-embed switched it must not leave
    the old model's vectors in it; and a switch waits for every indexed document."""
    kb = store.create_kb("docs", embedder="small")
    unit = np.eye(DIM, dtype=np.float32)[:2]
    put(store, kb, "a.md", ["one", "two"], vectors=unit)
    assert store.switch_kb_embedder(kb.id, IDENTITY, "small")
    with pytest.raises(Conflict, match="switched to another embedder"):
        put(store, kb, "b.md", ["three", "four"], vectors=unit, identity=OTHER_IDENTITY)
    assert store.get_document(kb.id, "b.md") is None  # nothing of it was written
    record, chunks = put(store, kb, "c.md", ["five", "six"])  # awaiting vectors
    refused = store.add_vectors_many(
        kb.id, [DocumentVectors(record.id, chunks, unit)], OTHER_IDENTITY
    )
    assert refused == []
    # Being re-embedded, it takes the new model's vectors beside the old ones...
    store.set_kb_embedder_target(kb.id, "large")
    put(store, kb, "b.md", ["three", "four"], vectors=unit, identity=OTHER_IDENTITY)
    # ...but switches only once no indexed document holds the old model's vectors.
    assert not store.switch_kb_embedder(kb.id, OTHER_IDENTITY, "large")
    assert store.get_kb_by_id(kb.id).embedder_next == "large"
    put(store, kb, "a.md", ["one", "two"], vectors=unit, identity=OTHER_IDENTITY)
    assert store.switch_kb_embedder(kb.id, OTHER_IDENTITY, "large")
    after = store.get_kb_by_id(kb.id)
    assert (after.identity_key, after.embedder, after.embedder_next) == (
        OTHER_IDENTITY.key,
        "large",
        None,
    )
    # The old model's vectors went with the switch (its search finds nothing).
    query = np.eye(DIM, dtype=np.float32)[0]
    assert store.dense_search([kb.id], IDENTITY, query, 10) == []
    assert store.dense_search([kb.id], OTHER_IDENTITY, query, 10)
    # A base without a name follows the process embedder: it takes any model's vectors.
    plain = store.create_kb("plain")
    put(store, plain, "a.md", ["one", "two"], vectors=unit)
    store.set_kb_identity(plain.id, IDENTITY)
    put(store, plain, "b.md", ["three", "four"], vectors=unit, identity=OTHER_IDENTITY)


# -- settings, state and progress ----------------------------------------------------------------
def test_description_and_chunking_are_updated(store: Store) -> None:
    kb = store.create_kb("docs", description="old")
    store.set_kb_description(kb.id, "new")
    settings = ChunkSettings(chunk_size=600, max_tokens=200, overlap=50)
    store.update_kb_chunking(kb.id, settings)
    updated = store.get_kb("docs")
    assert (updated.description, updated.chunk_settings) == ("new", settings)
    with pytest.raises(NotFound):
        store.set_kb_description(kb.id + 100, "nobody")


def test_state_and_progress_of_a_pass(store: Store) -> None:
    kb = store.create_kb("docs")
    assert store.get_kb("docs").state is KbState.PENDING
    store.set_kb_state(kb.id, KbState.INDEXING, started=True)
    store.set_kb_progress(kb.id, 3, 10)
    running = store.get_kb("docs")
    assert running.state is KbState.INDEXING and running.pass_started_at is not None
    assert (running.progress_done, running.progress_total) == (3, 10)
    assert running.pass_finished_at is None
    store.set_kb_state(kb.id, KbState.WAITING, "source_missing", finished=True)
    waiting = store.get_kb("docs")
    assert (waiting.state, waiting.state_reason) == (KbState.WAITING, "source_missing")
    assert waiting.pass_finished_at is not None
    store.set_kb_state(kb.id, KbState.INDEXING, started=True)  # a new pass starts from zero
    assert store.get_kb("docs").progress_done == 0
    with pytest.raises(NotFound):
        store.set_kb_state(kb.id + 100, KbState.READY)


# -- sources -----------------------------------------------------------------------------------
def test_sources_are_followed_labelled_and_listed(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    notes = store.add_source(kb.id, "/srv/team/notes")
    twin = store.add_source(kb.id, "/home/dana/notes")
    assert (notes.kb_id, notes.path, notes.label) == (kb.id, "/srv/team/notes", "notes")
    assert twin.label == "notes-2"
    assert [s.label for s in store.list_sources(kb.id)] == ["notes", "notes-2"]
    assert store.add_source(other.id, "/srv/team/notes").label == "notes"  # bases are apart
    for taken in ("/srv/team/notes", "/srv/team", "/srv/team/notes/2024"):
        with pytest.raises(Conflict):
            store.add_source(kb.id, taken)
    with pytest.raises(InvalidInput):
        store.add_source(kb.id, "relative/path")
    with pytest.raises(NotFound):
        store.list_sources(kb.id + 100)


def test_a_base_follows_at_most_max_sources_folders(store: Store) -> None:
    kb = store.create_kb("docs")
    for n in range(MAX_SOURCES):
        store.add_source(kb.id, f"/data/{n}")
    with pytest.raises(InvalidInput):
        store.add_source(kb.id, "/data/one-too-many")


def test_removing_a_source_drops_its_documents(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    source = store.add_source(kb.id, "/data/notes")
    from_folder = replace(new_doc("notes/a.md", "zebra"), source_id=source.id)
    store.replace_document(kb.id, from_folder, [], None, None, SETTINGS_KEY)
    put(store, kb, "added.md", ["zebra added directly"])
    with pytest.raises(NotFound):
        store.remove_source(other.id, source.id)  # not this base's folder
    assert store.remove_source(kb.id, source.id) == 1
    assert store.list_sources(kb.id) == []
    assert [d.path for d in store.list_documents(kb.id)] == ["added.md"]
    with pytest.raises(NotFound):
        store.remove_source(kb.id, source.id)
