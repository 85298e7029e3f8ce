"""One hit per document: grouping ranked passages by document, with hypothesis for the
invariants."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from lorebase.search.collapse import (
    PASSAGES_PER_HIT,
    by_document,
    collapsed,
    first_hits,
    without_repeats,
)
from lorebase.search.query import Hit
from lorebase.types import Provenance

chunks = st.lists(st.sampled_from([f"c{i}" for i in range(30)]), unique=True, max_size=30)
documents = st.dictionaries(
    st.sampled_from([f"c{i}" for i in range(30)]), st.sampled_from("abcdef"), max_size=30
)


def hit(chunk_id: str, document: str = "d", text: str | None = None) -> Hit:
    provenance = Provenance(
        knowledge_base="kb",
        knowledge_base_id=1,
        document_id=document,
        path=f"{document}.md",
        title=None,
        kind="md",
        start=0,
        end=1,
    )
    return Hit(chunk_id, provenance, text or chunk_id, "", {})


@given(chunks, documents)
def test_groups_keep_every_id_once_in_order_of_their_best(
    order: list[str], document_of: dict[str, str]
) -> None:
    groups = by_document(order, document_of)
    flat = [item for group in groups for item in group]
    assert sorted(flat) == sorted(order) and len(flat) == len(order)
    firsts = [group[0] for group in groups]
    assert firsts == sorted(firsts, key=order.index)  # groups ordered by their best passage
    for group in groups:
        assert group == sorted(group, key=order.index)
        named = {document_of.get(item, item) for item in group}
        assert len(named) == 1  # one document a group (an unknown one: alone)
    known = [document_of[g[0]] for g in groups if g[0] in document_of]
    assert len(known) == len(set(known))  # each document once


def test_a_document_counts_once_with_its_other_passages() -> None:
    order = ["a1", "b1", "a2", "c1", "a3"]
    document_of = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "c1": "C"}
    groups = by_document(order, document_of)
    assert groups == [["a1", "a2", "a3"], ["b1"], ["c1"]]
    hits = {item: hit(item, document_of[item]) for item in order}
    out = collapsed(groups, hits)
    assert [h.chunk_id for h in out] == ["a1", "b1", "c1"]
    assert [p.chunk_id for p in out[0].passages] == ["a2", "a3"]


def test_at_most_so_many_passages_come_along() -> None:
    order = [f"a{i}" for i in range(PASSAGES_PER_HIT + 4)]
    (only,) = collapsed(by_document(order, dict.fromkeys(order, "A")), {i: hit(i) for i in order})
    assert len(only.passages) == PASSAGES_PER_HIT


def test_a_passage_gone_from_the_store_is_left_out() -> None:
    groups = [["a1", "a2"], ["b1"]]
    out = collapsed(groups, {"a2": hit("a2", "A")})
    assert [h.chunk_id for h in out] == ["a2"] and not out[0].passages


def test_repeated_passages_are_shown_once() -> None:
    hits = [hit("a", "A", "same text"), hit("b", "B", "same  text"), hit("c", "C", "other")]
    assert [h.chunk_id for h in without_repeats(hits)] == ["a", "c"]


def read_all(stored: dict[str, Hit], ids: Sequence[str]) -> dict[str, Hit]:
    return {item: stored[item] for item in ids if item in stored}


@example(  # a group's first passage gone: its hit is the next, its passages the read ones
    ["c0", "c1", "c2", "c3", "c4"],
    dict.fromkeys(["c0", "c1", "c2", "c3", "c4"], "a"),
    {"c0"},
    {},
    1,
    0,
)
@given(
    chunks,
    documents,
    st.sets(st.sampled_from([f"c{i}" for i in range(30)])),
    st.dictionaries(st.sampled_from([f"c{i}" for i in range(30)]), st.sampled_from("xyz")),
    st.integers(1, 12),
    st.integers(0, 20),
)
def test_the_first_hits_are_those_of_reading_every_group_at_once(
    order: list[str],
    document_of: dict[str, str],
    gone: set[str],
    texts: dict[str, str],
    wanted: int,
    slack: int,
) -> None:
    """Read a batch at a time, the hits are the first ``wanted`` of reading every group up to
    the deepest at once (each group's first passages), collapsing and leaving out repeats
    (here: passages of a few texts, chunks gone since), and no chunk is read twice or past
    what the hits needed."""
    stored = {
        item: hit(item, document_of.get(item, "d"), texts.get(item))
        for item in order
        if item not in gone
    }
    reads: list[str] = []

    def read(ids: Sequence[str]) -> dict[str, Hit]:
        reads.extend(ids)
        return read_all(stored, ids)

    groups = by_document(order, document_of)
    deepest = wanted + slack
    # What a search read before: each group's first PASSAGES_PER_HIT + 1 passages at once.
    window = [item for group in groups[:deepest] for item in group[: PASSAGES_PER_HIT + 1]]
    expected = without_repeats(collapsed(groups[:deepest], read_all(stored, window)))[:wanted]
    assert first_hits(groups, read, wanted, deepest) == expected
    assert len(reads) == len(set(reads))
    if len(expected) == wanted:  # nothing was read beyond the group of the last hit
        last = next(i for i, g in enumerate(groups) if expected[-1].chunk_id in g)
        assert not set(reads) & {item for group in groups[last + 1 :] for item in group}


def test_repeats_are_told_by_the_one_line_text_a_search_keeps() -> None:
    """A search gives its hits' texts on one line as its snippets keep them (read once for
    both): the hits are those the texts' own one-line form gives, and every hit looked at is
    then kept, ready for its snippet."""
    from lorebase.search.snippets import KnownPassages

    kept = KnownPassages()

    def flat(found: Hit) -> str:
        return kept.one_line(found.text, "en")

    stored = {
        "a1": hit("a1", "A", "Same\n text"),
        "a2": hit("a2", "A", "more of A"),
        "b1": hit("b1", "B", "Same  text"),
        "c1": hit("c1", "C", "other"),
    }
    groups = by_document(
        list(stored), {item: h.provenance.document_id for item, h in stored.items()}
    )

    def read(ids: Sequence[str]) -> dict[str, Hit]:
        return read_all(stored, ids)

    shown = first_hits(groups, read, 3, 5, flat=flat)
    assert shown == first_hits(groups, read, 3, 5)
    assert [h.chunk_id for h in shown] == ["a1", "c1"]
    assert {text for text, _ in kept._kept} == {"Same\n text", "Same  text", "other"}
    assert without_repeats(list(stored.values()), flat) == without_repeats(list(stored.values()))
