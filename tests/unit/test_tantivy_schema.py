"""The pure parts of the Tantivy keyword engine: what a chunk indexes, how a query weighs its
tokens, and how a hit's chunk id is kept."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from lorebase.store import stored_chunk_id
from lorebase.store.sqlite import tantivy_schema as ti
from lorebase.store.terms import MIN_IDF


def test_weighted_text_repeats_each_field_by_its_weight() -> None:
    fields = ["Title", "", "docs a md", "sym", "body"]
    text = ti.weighted_text(fields, "en", (2.0, 2.0, 1.0, 2.0, 1.0))
    assert text.split("\n") == ["titl", "titl", "doc a md", "sym", "sym", "bodi"]
    weights = (0.0, 0.4, 1.0, 1.6, 1.0)
    assert ti.weighted_text(["t", "h", "p", "s", "b"], "en", weights).split("\n") == [
        "h",
        "p",
        "s",
        "s",
        "b",
    ]


def test_weighted_text_is_analysed_in_the_chunks_language() -> None:
    assert ti.weighted_text(["", "", "", "", "Die Häuser liefen"], "de") == "die haus lief"
    assert ti.weighted_text(["", "", "", "", "黑豹队的防守"], "zh").split() == [
        *("黑", "豹", "队", "的", "防守", "防", "守")
    ]


@given(st.integers(1, 10_000), st.integers(0, 10_000))
def test_idf_boost_turns_lucene_idf_into_fts5_idf(frequency: int, extra: int) -> None:
    rows = frequency + extra
    ratio = (rows - frequency + 0.5) / (frequency + 0.5)
    boosted = ti.idf_boost(frequency, rows) * math.log1p(ratio)
    assert math.isclose(boosted, max(math.log(ratio), MIN_IDF), rel_tol=1e-9, abs_tol=1e-12)


@given(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32))
def test_a_chunk_id_is_two_64_bit_words(chunk_id: str) -> None:
    words = ti.id_words(chunk_id)
    assert words is not None
    high, low = words
    assert 0 <= high < 1 << 64 and 0 <= low < 1 << 64
    assert ti.id_of(high, low) == chunk_id


def test_only_stored_chunk_ids_have_words() -> None:
    stored = stored_chunk_id("doc", "chunk")
    assert ti.id_words(stored) is not None
    for other in ("c1", stored.upper(), stored + "0", stored[:-1] + "g"):
        assert ti.id_words(other) is None


@given(st.integers(1, 1000), st.integers(1, 1000))
def test_idf_boost_holds_when_deleted_chunks_still_count(rows: int, extra: int) -> None:
    """A term's frequency may count deleted chunks a merge has not dropped yet."""
    assert 0 < ti.idf_boost(rows + extra, rows) <= 1.0
