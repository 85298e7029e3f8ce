"""The documents of chunks kept across searches: the store is asked only about chunks new to
the process, what it does not hold is never kept, and memory stays bounded."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from lorebase.search.known_documents import KnownDocuments

HELD = {f"c{n}": f"d{n // 3}" for n in range(40)}


def asking(asked: list[list[str]]) -> Callable[[list[str]], dict[str, str]]:
    def ask(chunk_ids: list[str]) -> dict[str, str]:
        asked.append(list(chunk_ids))
        return {chunk_id: HELD[chunk_id] for chunk_id in chunk_ids if chunk_id in HELD}

    return ask


def test_only_chunks_new_to_the_process_are_asked_for() -> None:
    asked: list[list[str]] = []
    known = KnownDocuments()
    assert known.of(["c1", "c2", "gone"], asking(asked)) == {"c1": "d0", "c2": "d0"}
    assert known.of(["c2", "c5", "gone"], asking(asked)) == {"c2": "d0", "c5": "d1"}
    assert known.of(["c5", "c1"], asking(asked)) == {"c5": "d1", "c1": "d0"}
    # The second search asked about its two new chunks (a chunk not held is asked again:
    # it may be written since); the third asked nothing.
    assert asked == [["c1", "c2", "gone"], ["c5", "gone"]]
    assert len(known) == 3


@given(st.lists(st.lists(st.sampled_from([*HELD, "gone", "x"]), max_size=15), max_size=8))
def test_what_is_known_is_what_the_store_says_and_memory_stays_bounded(
    searches: list[list[str]],
) -> None:
    known = KnownDocuments(size=6)
    for chunk_ids in searches:
        found = known.of(chunk_ids, asking([]))
        assert found == {c: HELD[c] for c in chunk_ids if c in HELD}
        assert len(known) <= 6
