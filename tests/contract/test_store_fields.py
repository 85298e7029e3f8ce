"""``Fields`` and the field conditions of ``Chunks.matching_documents``: what a search's
metadata filters resolve to, the fields shown with a hit, the tags people set. Run against
every backend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from contract.store_contract import SETTINGS_KEY, Backend, make_chunks, new_doc
from lorebase.errors import InvalidInput, NotFound
from lorebase.fields import Condition, conditions_from_json, parse_condition
from lorebase.store.base import KnowledgeBase, Region, Store
from lorebase.types import MetadataValue


def _put(
    store: Store,
    kb: KnowledgeBase,
    path: str,
    metadata: Mapping[str, MetadataValue],
    *,
    title: str | None = None,
) -> str:
    document = replace(new_doc(path, "text", title=title), metadata=dict(metadata))
    chunks = make_chunks(["some text"], salt=path)
    return store.replace_document(kb.id, document, chunks, None, None, SETTINGS_KEY).id


def _matching(store: Store, kb: KnowledgeBase, *conditions: str | Condition) -> set[str]:
    parsed = [c if isinstance(c, Condition) else parse_condition(c) for c in conditions]
    return set(store.matching_documents([kb.id], conditions=parsed))


@pytest.fixture
def library(store: Store) -> tuple[KnowledgeBase, dict[str, str]]:
    kb = store.create_kb("library")
    ids = {
        "policy": _put(
            store,
            kb,
            "hr/leave.md",
            {"tags": ("policy", "HR"), "author": "Ann Lee", "date": "2025-03-04"},
            title="Leave policy",
        ),
        "minutes": _put(
            store,
            kb,
            "notes/minutes.md",
            {"tags": "meeting", "author": ("Bob", "ann lee"), "date": "2024-12-31T23:30:00+01:00"},
        ),
        "draft": _put(store, kb, "draft.md", {"status": "Draft", "date": "2025"}),
        "bare": _put(store, kb, "bare.txt", {}),
    }
    return kb, ids


def test_equality_ignores_case_and_a_list_matches_any_value(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    assert _matching(store, kb, "tags=policy") == {ids["policy"]}
    assert _matching(store, kb, "tags=hr") == {ids["policy"]}
    assert _matching(store, kb, "author=ANN LEE") == {ids["policy"], ids["minutes"]}
    assert _matching(store, kb, "author=Bob|nobody") == {ids["minutes"]}
    assert _matching(store, kb, "status=draft") == {ids["draft"]}
    assert _matching(store, kb, "title=leave policy") == {ids["policy"]}
    assert _matching(store, kb, "kind=txt") == {ids["bare"]}
    assert _matching(store, kb, "tags=nothing") == set()


def test_conditions_all_hold_and_not_equal_keeps_documents_without_the_field(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    assert _matching(store, kb, "author=ann lee", "tags=meeting") == {ids["minutes"]}
    assert _matching(store, kb, "status!=draft") == {ids["policy"], ids["minutes"], ids["bare"]}
    assert _matching(store, kb, "tags!=policy", "tags!=meeting") == {ids["draft"], ids["bare"]}


def test_dates_compare_as_dates_at_any_precision(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    # The minutes' date is 2024-12-31 22:30 UTC; "2025" is a year.
    assert _matching(store, kb, "date>=2025-01-01") == {ids["policy"], ids["draft"]}
    assert _matching(store, kb, "date<2025") == {ids["minutes"]}
    assert _matching(store, kb, "date<=2024-12-31") == {ids["minutes"]}
    assert _matching(store, kb, "date>2024-12-31") == {ids["policy"], ids["draft"]}
    assert _matching(store, kb, "date=2025-03") == {ids["policy"]}
    assert _matching(store, kb, "date=2024") == {ids["minutes"]}
    assert _matching(store, kb, "date!=2025-03-04") == {ids["minutes"], ids["draft"], ids["bare"]}
    # modified: the file's mtime (1.5 s after the epoch) when its properties give none.
    assert _matching(store, kb, "modified<1971") == set(ids.values())
    json = conditions_from_json({"date": {"$gte": "2025-02", "$lt": "2025-04"}})
    assert _matching(store, kb, *json) == {ids["policy"]}
    # A date given as a year stands for its first day.
    json = conditions_from_json({"date": {"$gte": "2025-01", "$lt": "2025-04"}})
    assert _matching(store, kb, *json) == {ids["policy"], ids["draft"]}


def test_field_conditions_combine_with_the_path_and_stay_within_the_bases(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    other = store.create_kb("other")
    elsewhere = _put(store, other, "hr/leave.md", {"tags": "policy"})
    wanted = [parse_condition("tags=policy")]
    assert list(store.matching_documents([kb.id], path_prefix="hr/", conditions=wanted)) == [
        ids["policy"]
    ]
    assert list(store.matching_documents([kb.id], path_prefix="notes/", conditions=wanted)) == []
    both = store.matching_documents([kb.id, other.id], conditions=wanted)
    assert set(both) == {ids["policy"], elsewhere} and list(both) == sorted(both)


def test_a_document_shows_its_fields_and_the_names_are_listed(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    shown = store.document_fields([kb.id], [ids["policy"], ids["bare"], "nope"])
    assert shown[ids["policy"]]["tags"] == ["HR", "policy"]
    assert shown[ids["policy"]]["author"] == ["Ann Lee"]
    assert shown[ids["policy"]]["date"] == ["2025-03-04"]
    assert shown[ids["bare"]] == {"kind": ["txt"], "modified": ["1970-01-01T00:00:01Z"]}
    assert "nope" not in shown
    other = store.create_kb("other")
    assert store.document_fields([other.id], [ids["policy"]]) == {}  # another base's
    assert store.field_names([kb.id]) == [
        "author",
        "date",
        "kind",
        "modified",
        "status",
        "tags",
        "title",
    ]
    assert store.field_names([other.id]) == []


def test_tags_people_set_survive_a_new_reading_and_are_removed_on_demand(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    assert store.tag_document(kb.id, ids["bare"], ["Urgent", "to read"], []) == [
        "to read",
        "Urgent",
    ]
    assert _matching(store, kb, "tags=urgent") == {ids["bare"]}
    assert store.user_tags(kb.id, ids["bare"]) == ["to read", "Urgent"]
    assert store.user_tags(kb.id, ids["policy"]) == []  # its tags are its file's
    # Read again (its file changed): its own fields are replaced, the tags people set stay.
    again = _put(store, kb, "bare.txt", {"tags": "fresh"})
    assert again == ids["bare"]
    assert _matching(store, kb, "tags=urgent") == {ids["bare"]}
    assert _matching(store, kb, "tags=fresh") == {ids["bare"]}
    assert store.tag_document(kb.id, ids["bare"], [], ["URGENT"]) == ["to read"]
    assert _matching(store, kb, "tags=urgent") == set()
    with pytest.raises(InvalidInput, match="comes from the document itself"):
        store.tag_document(kb.id, ids["bare"], [], ["fresh"])
    assert _matching(store, kb, "tags=fresh") == {ids["bare"]}  # nothing was changed
    other = store.create_kb("other")
    with pytest.raises(NotFound):
        store.tag_document(other.id, ids["bare"], ["x"], [])


def test_a_filter_asked_again_sees_every_change_by_this_process_or_another(
    backend: Backend,
    store: Store,
    library: tuple[KnowledgeBase, dict[str, str]],
    tmp_path: Path,
) -> None:
    """A store may give a filter's documents again without asking the database while its
    bases have not changed (SQLite does, see lorebase.store.restriction): every kind of change
    — tags people set, a document read again or added, a deletion, a write by another
    process — is seen by the next search."""
    kb, ids = library
    first = store.matching_documents([kb.id], conditions=[parse_condition("tags=policy")])
    assert set(first) == {ids["policy"]}
    assert set(store.matching_documents([kb.id], conditions=[parse_condition("tags=policy")])) == {
        ids["policy"]
    }
    store.tag_document(kb.id, ids["bare"], ["Policy"], [])
    assert _matching(store, kb, "tags=policy") == {ids["policy"], ids["bare"]}
    store.tag_document(kb.id, ids["bare"], [], ["policy"])
    assert _matching(store, kb, "tags=policy") == {ids["policy"]}
    added = _put(store, kb, "hr/travel.md", {"tags": "policy"})
    assert _matching(store, kb, "tags=policy") == {ids["policy"], added}
    _put(store, kb, "hr/travel.md", {"tags": "travel"})  # read again, its tags changed
    assert _matching(store, kb, "tags=policy") == {ids["policy"]}
    assert _matching(store, kb, "tags=policy", "author=ann lee") == {ids["policy"]}
    other = backend.open(tmp_path)  # another process on the same data
    try:
        other.tag_document(kb.id, ids["draft"], ["policy"], [])
        assert _matching(store, kb, "tags=policy") == {ids["policy"], ids["draft"]}
        other.delete_documents(kb.id, [ids["policy"]])
        assert _matching(store, kb, "tags=policy") == {ids["draft"]}
        assert _matching(store, kb, "tags=policy", "author=ann lee") == set()
    finally:
        other.close()


def test_deleting_a_document_deletes_its_fields(
    store: Store, library: tuple[KnowledgeBase, dict[str, str]]
) -> None:
    kb, ids = library
    store.tag_document(kb.id, ids["policy"], ["kept"], [])
    store.delete_documents(kb.id, [ids["policy"]])
    assert _matching(store, kb, "tags=kept") == set()
    assert store.document_fields([kb.id], [ids["policy"]]) == {}
    assert "author" in store.field_names([kb.id])  # the minutes still have one
    store.delete_kb(kb.id)
    assert store.field_names([kb.id]) == []


def test_regions_are_kept_with_their_document_and_found_by_passage(store: Store) -> None:
    kb = store.create_kb("scans")
    regions = (
        Region(1, 0, 40, ((0.1, 0.1, 0.9, 0.15), (0.1, 0.16, 0.5, 0.2))),
        Region(1, 42, 90, ((0.1, 0.3, 0.9, 0.35),)),
        Region(2, 92, 150, ((0.2, 0.1, 0.8, 0.2),)),
    )
    document = replace(new_doc("scan.pdf", "x" * 150), regions=regions)
    chunks = make_chunks(["some text"], salt="scan")
    document_id = store.replace_document(kb.id, document, chunks, None, None, SETTINGS_KEY).id
    assert store.regions(kb.id, document_id, 1, 0, 41) == list(regions[0].boxes)
    assert store.regions(kb.id, document_id, 1, 30, 60) == [*regions[0].boxes, *regions[1].boxes]
    assert store.regions(kb.id, document_id, 2, 0, 150) == list(regions[2].boxes)
    assert store.regions(kb.id, document_id, 3, 0, 150) == []
    other = store.create_kb("other")
    assert store.regions(other.id, document_id, 1, 0, 150) == []  # another base's document
    # Read again: the new reading's regions replace the old ones.
    again = replace(document, content_hash="changed", regions=regions[2:])
    store.replace_document(kb.id, again, chunks, None, None, SETTINGS_KEY)
    assert store.regions(kb.id, document_id, 1, 0, 150) == []
    assert store.regions(kb.id, document_id, 2, 0, 150) == list(regions[2].boxes)
    store.delete_documents(kb.id, [document_id])
    assert store.regions(kb.id, document_id, 2, 0, 150) == []


def test_a_restriction_changes_which_chunks_match_never_their_scores(store: Store) -> None:
    """Few allowed documents (a term set) or many (ranked deeper and kept): the scores are
    those of the unrestricted ranking, which the relevance floor compares with its ceiling."""
    kb = store.create_kb("scores")
    ids = []
    for n in range(3):
        chunks = make_chunks([f"heron wading in pond number {n} " + "reeds " * n], salt=str(n))
        written = store.replace_document(
            kb.id, new_doc(f"d{n}.md", "x"), chunks, None, None, SETTINGS_KEY
        )
        ids.append(written.id)
    unrestricted = dict(store.keyword_search([kb.id], "heron pond reeds", 10))
    restricted = dict(store.keyword_search([kb.id], "heron pond reeds", 10, ids[:2]))
    assert restricted and set(restricted) < set(unrestricted)
    for chunk_id, score in restricted.items():
        assert score == pytest.approx(unrestricted[chunk_id], rel=1e-5)


@pytest.mark.parametrize("allowed_count", [3, 70, 140])
def test_a_restricted_keyword_ranking_is_the_unrestricted_one_cut_to_the_allowed(
    store: Store, allowed_count: int
) -> None:
    """However the restriction is carried out (a term set of a few documents; for many, a
    deeper unrestricted ranking whose hits are kept by their document), the hits are the
    unrestricted ranking's hits of the allowed documents, in its order, with its scores."""
    kb = store.create_kb("depth")
    ids = []
    for n in range(150):
        text = "heron " * (1 + n % 9) + " ".join(f"filler{n}x{k}" for k in range(n % 11 + 1))
        chunks = make_chunks([text, f"unrelated words {n}"], salt=f"depth{n}")
        written = store.replace_document(
            kb.id, new_doc(f"d{n}.md", "x"), chunks, None, None, SETTINGS_KEY
        )
        ids.append(written.id)
    allowed = ids[::2][:allowed_count] if allowed_count <= 75 else ids[:allowed_count]
    owner = {}
    for document_id in ids:
        for chunk in store.document_chunks(kb.id, document_id, 0, 10):
            owner[chunk.id] = document_id
    everything = store.keyword_search([kb.id], "heron", 1000)
    expected = [(c, s) for c, s in everything if owner[c] in set(allowed)][:8]
    found = store.keyword_search([kb.id], "heron", 8, allowed)
    assert [c for c, _ in found] == [c for c, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-5)
