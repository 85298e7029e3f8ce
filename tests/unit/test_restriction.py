"""What a filter resolves to is kept and reused (lorebase.store.restriction): the set and the
row masks derived from it are made once, and a kept filter is given again only while its bases'
version is unchanged."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lorebase.store.restriction import Restriction, RestrictionCache
from lorebase.store.sqlite.dense import MASKS_PER_INDEX, LoadedIndex
from lorebase.store.vectors import ExactIndex


def _index(documents: int = 6, per_document: int = 3, seed: int = 0) -> LoadedIndex:
    rng = np.random.default_rng(seed)
    rows = documents * per_document
    matrix = rng.standard_normal((rows, 8)).astype(np.float32)
    return LoadedIndex(
        generation=1,
        index=ExactIndex(matrix),
        chunk_ids=[f"c{row}" for row in range(rows)],
        document_ids=[f"d{doc}" for doc in range(documents)],
        document_codes=np.repeat(np.arange(documents, dtype=np.int32), per_document),
    )


def test_a_restriction_is_made_once_and_derives_each_thing_once() -> None:
    ids = Restriction(["b", "a", "b"])
    assert Restriction.of(ids) is ids
    assert Restriction.of(["x", "y"]) == ("x", "y")
    assert ids.members == frozenset({"a", "b"}) and ids.members is ids.members
    calls: list[int] = []

    def make() -> int:
        calls.append(1)
        return 42

    assert ids.derived("count", make) == 42
    assert ids.derived("count", make) == 42
    assert len(calls) == 1
    assert not Restriction()


def test_the_cache_gives_a_filter_back_only_at_the_version_it_was_resolved_at() -> None:
    cache = RestrictionCache(size=2)
    first = Restriction(["a"])
    cache.put("tags=x", (1, 1.0), first)
    assert cache.get("tags=x", (1, 1.0)) is first
    assert cache.get("tags=x", (2, 1.0)) is None  # the base changed since
    assert cache.get("tags=y", (1, 1.0)) is None
    cache.put("tags=y", (1, 1.0), Restriction(["b"]))
    cache.get("tags=x", (1, 1.0))  # the most recently used stays
    cache.put("tags=z", (1, 1.0), Restriction(["c"]))
    assert cache.get("tags=x", (1, 1.0)) is first
    assert cache.get("tags=y", (1, 1.0)) is None
    cache.clear()
    assert cache.get("tags=x", (1, 1.0)) is None


def test_an_index_makes_a_restrictions_row_mask_once_and_keeps_a_few() -> None:
    index = _index()
    chosen = Restriction(["d1", "d4", "unknown"])
    mask = index.allowed(chosen)
    assert mask is not None and index.allowed(chosen) is mask
    assert np.flatnonzero(mask).tolist() == [3, 4, 5, 12, 13, 14]
    # A plain list is not kept (it may change), and masks the same rows.
    plain = index.allowed(["d1", "d4"])
    assert plain is not None and plain is not mask and np.array_equal(plain, mask)
    for other in range(MASKS_PER_INDEX):
        index.allowed(Restriction([f"d{other % 6}"]))
    again = index.allowed(chosen)  # made again once it left the few kept
    assert again is not None and again is not mask and np.array_equal(again, mask)


@given(
    st.lists(st.sampled_from([f"d{d}" for d in range(8)]), max_size=8),
    st.integers(min_value=1, max_value=30),
)
def test_a_kept_mask_searches_exactly_as_the_ids_it_came_from(
    documents: list[str], limit: int
) -> None:
    index = _index(documents=8, per_document=4, seed=len(documents))
    query = np.linspace(-1, 1, 8).astype(np.float32)
    kept = Restriction(documents)
    first = index.search(query, limit, kept)
    assert index.search(query, limit, kept) == first
    assert first == index.search(query, limit, list(documents))
    owners = {f"c{row}": f"d{row // 4}" for row in range(32)}
    assert {owners[chunk] for chunk, _ in first} <= set(documents)
