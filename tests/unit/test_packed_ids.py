"""Chunk ids of in-memory index rows, packed as 16 raw bytes each."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.store import stored_chunk_id
from lorebase.store.packed_ids import ID_BYTES, IdLookup, PackedIds


def ids(n: int, start: int = 0) -> list[str]:
    return [
        stored_chunk_id(f"doc{i // 7}", hashlib.sha256(str(i).encode()).hexdigest())
        for i in range(start, start + n)
    ]


def test_stored_ids_are_packed_and_read_back() -> None:
    made = ids(1000)
    packed = PackedIds(made[:10])
    for part in (made[10:11], made[11:500], [], made[500:]):
        packed.extend(part)  # grows several times
    assert len(packed) == 1000 and list(packed) == made
    assert packed[-1] == made[-1] and packed[123] == made[123]
    assert packed.nbytes < 1.3 * ID_BYTES * 1000  # against ~89 bytes a row as strings


def test_other_ids_turn_the_store_into_a_list_that_keeps_every_row() -> None:
    made = ids(5)
    packed = PackedIds(made)
    packed.extend(["c1", made[0].upper()])
    packed.extend(made[:2])
    assert list(packed) == [*made, "c1", made[0].upper(), *made[:2]]


@given(st.lists(st.sampled_from([*ids(20), "x", "0" * 31, "A" * 32, ""]), max_size=30))
def test_any_ids_come_back_as_given(given_ids: list[str]) -> None:
    packed = PackedIds()
    for start in range(0, len(given_ids), 4):
        packed.extend(given_ids[start : start + 4])
    assert list(packed) == given_ids


@given(
    st.lists(st.sampled_from([*ids(20), "x", "A" * 32]), min_size=1, max_size=30),
    st.lists(st.integers(min_value=0, max_value=29), max_size=12),
)
def test_the_ids_of_many_rows_at_once_are_each_row_s(given_ids: list[str], rows: list[int]) -> None:
    """A search's ids read in one conversion are the rows' own ids, in the order asked,
    repeats and negative rows included; a row beyond the ids is an error."""
    packed = PackedIds(given_ids)
    asked = [row % len(given_ids) for row in rows] + [-1]
    assert packed.at(asked) == [packed[row] for row in asked] == [given_ids[r] for r in asked]
    assert packed.at([]) == []
    with pytest.raises(IndexError):
        packed.at([0, len(given_ids)])


@given(
    st.lists(st.integers(0, 29), max_size=60),
    st.lists(st.integers(0, 39), max_size=20),
    st.integers(0, 60),
    st.booleans(),
    st.booleans(),
)
def test_a_lookup_finds_every_row_of_an_id_among_the_first_rows(
    rows: list[int], asked: list[int], size: int, plain: bool, odd: bool
) -> None:
    """Each asked id's rows (in order) among the first ``size`` rows, none for an id not among
    them; the same whether the ids are packed or kept as a list (ids that are not hex), and
    whether the ids asked are all stored ones (checked at once) or not."""
    pool = ids(40) if not plain else [f"c{n}" for n in range(40)]
    packed = PackedIds([pool[n] for n in rows])
    size = min(size, len(rows))
    wanted = (
        [pool[n] for n in asked]
        + ["f" * 32]
        + (["not an id", "A" * 32, "f" * 31, "f" * 33] if odd else [])
    )
    expected = [
        tuple(row for row in range(size) if rows[row] == pool.index(w)) if w in pool else ()
        for w in wanted
    ]
    lookup = IdLookup(packed, size)
    assert lookup.rows(wanted) == expected
    # Asked again (remembered), in another order, and among fewer rows (not remembered).
    assert lookup.rows(wanted[::-1]) == expected[::-1]
    fewer = size // 2
    assert lookup.rows(wanted, fewer) == [tuple(r for r in e if r < fewer) for e in expected]


@given(
    st.lists(st.integers(0, 29), max_size=60),
    st.lists(st.integers(0, 39), max_size=20),
    st.integers(0, 60),
    st.integers(0, 60),
    st.booleans(),
)
def test_a_grown_lookup_finds_what_one_made_at_once_finds(
    rows: list[int], asked: list[int], first: int, second: int, plain: bool
) -> None:
    """Rows appended since a lookup was made are merged into a grown one (never sorted
    again): it answers as a lookup made over all of them at once, and a smaller snapshot's
    question (``within``) sees only its own rows."""
    pool = ids(40) if not plain else [f"c{n}" for n in range(40)]
    packed = PackedIds([pool[n] for n in rows])
    first, second = sorted((min(first, len(rows)), min(second, len(rows))))
    wanted = [pool[n] for n in asked]
    grown = IdLookup(packed, first).grown(second)
    assert grown.size == second
    assert grown.rows(wanted) == IdLookup(packed, second).rows(wanted)
    assert grown.rows(wanted, first) == IdLookup(packed, first).rows(wanted)


def test_a_lookup_past_its_memory_bound_forgets_and_answers_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows remembered are bounded: past the bound the memory starts afresh, and every
    answer is still the rows of a fresh lookup."""
    from lorebase.store import packed_ids

    monkeypatch.setattr(packed_ids, "REMEMBERED_IDS", 5)
    made = ids(30)
    packed = PackedIds(made + made[:3])  # three ids in two rows each
    lookup = IdLookup(packed, len(packed))
    for start in range(0, 30, 4):
        wanted = made[start : start + 4] + made[:2]
        assert lookup.rows(wanted) == IdLookup(packed, len(packed))._rows(wanted, len(packed))
        assert len(lookup._found) <= 5
