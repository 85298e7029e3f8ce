"""The pure parts of the Tantivy keyword engine: what a chunk indexes, how a query weighs its
tokens, and how hits are named from the snapshot."""

from __future__ import annotations

import math
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from lorebase.store.sqlite import tantivy_index as ti


def test_weighted_text_repeats_each_field_by_its_weight() -> None:
    text = ti.weighted_text(["Title", "", "docs a md", "sym", "body"], (2.0, 2.0, 1.0, 2.0, 1.0))
    assert text.split("\n") == ["Title", "Title", "docs a md", "sym", "sym", "body"]
    assert ti.weighted_text(["t", "h", "p", "s", "b"], (0.0, 0.4, 1.0, 1.6, 1.0)).split("\n") == [
        "h",
        "p",
        "s",
        "s",
        "b",
    ]


def test_query_tokens_count_a_stem_once_per_term() -> None:
    tokens = ti.query_tokens("Retrieval of retrieved documents, e.g. the RETRIEVAL", ti.analyzer())
    # "retrieval" twice (case-folded duplicates are one term), "retrieved": one stem, 2 terms.
    assert tokens == {"retriev": 2, "document": 1, "e": 1, "g": 1}


def test_query_tokens_fold_accents_and_keep_stop_words_only_when_alone() -> None:
    assert ti.query_tokens("Configuração", ti.analyzer()) == {"configuracao": 1}
    assert ti.query_tokens("the", ti.analyzer()) == {"the": 1}
    assert ti.query_tokens("?! --", ti.analyzer()) == {}


@given(st.integers(1, 10_000), st.integers(1, 10_000))
def test_idf_boost_turns_lucene_idf_into_fts5_idf(frequency: int, extra: int) -> None:
    rows = frequency + extra - 1
    if frequency > rows:
        return
    ratio = (rows - frequency + 0.5) / (frequency + 0.5)
    boosted = ti.idf_boost(frequency, rows) * math.log1p(ratio)
    assert math.isclose(boosted, max(math.log(ratio), ti.MIN_IDF), rel_tol=1e-9, abs_tol=1e-12)


def test_chunk_keys_are_63_bits_of_the_id() -> None:
    assert ti.chunk_key("f" * 32) == (1 << 63) - 1
    assert ti.chunk_key("0123456789abcdef" + "0" * 16) == 0x0123456789ABCDEF
    assert 0 <= ti.chunk_key("not hex at all") < 1 << 63
    assert ti.chunk_key("not hex at all") != ti.chunk_key("not hex at all!")


def test_hits_are_named_from_the_snapshot_and_a_reused_rowid_is_left_out() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE chunks (rowid INTEGER PRIMARY KEY, id TEXT)")
    conn.executemany("INSERT INTO chunks VALUES (?, ?)", [(1, "a" * 32), (2, "b" * 32)])
    found = [
        (3.0, 2, ti.chunk_key("b" * 32)),
        (2.0, 1, ti.chunk_key("c" * 32)),  # rowid 1 now holds another chunk
        (1.0, 9, ti.chunk_key("d" * 32)),  # gone
    ]
    assert ti.TantivyIndexes._named(conn, found) == [("b" * 32, 3.0)]
