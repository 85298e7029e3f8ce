"""The keyword query plan for large indexes: split by term frequency, same scores and order as
the plain OR query for every row holding a rare term."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lorebase.store.sqlite import fts, search
from lorebase.store.sqlite.store import SqliteStore, connect
from unit.plain_documents import plain_document

COMMON = "alpha"  # in every chunk
SEMI = "gamma"  # in every third chunk
RARE = ("beta", "delta", "omega")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "lorebase.db", lexical="fts5") as opened:
        kb = opened.create_kb("kb")
        for number in range(12):
            texts = []
            for i in range(20):
                row = number * 20 + i
                words = [COMMON] * (1 + row % 3) + ["filler"] * (row % 7)
                if row % 3 == 0:
                    words.append(SEMI)
                if row % 17 == 0:
                    words.append(RARE[0])
                if row % 29 == 0:
                    words += [RARE[1], COMMON]
                if row % 31 == 0:
                    words.append(RARE[2])
                texts.append(" ".join(words) + f" row{row}")
            document, chunks = plain_document(number, texts)
            opened.replace_document(kb.id, document, chunks, None, None, "s")
        yield opened


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan as on a large index: split from 10 rows; anchors may cover 15% of the rows;
    frequencies counted exactly (cap: every row)."""
    monkeypatch.setattr(fts, "SPLIT_FROM_ROWS", 10)
    monkeypatch.setattr(fts, "ANCHOR_SHARE", 0.15)
    monkeypatch.setattr(fts, "DF_CAP_SHARE", 1.0)


def _plain_or(store: SqliteStore, text: str, limit: int) -> list[tuple[str, float]]:
    conn = connect(store.path)
    kb_id = store.get_kb("kb").id
    match = fts.match_any(fts.search_terms(text))
    sql = fts.keyword_search_sql(with_documents=False)
    rows = conn.execute(sql, (match, json.dumps([kb_id]), limit)).fetchall()
    conn.close()
    return [(chunk_id, score) for chunk_id, score, _ in rows]


def test_small_indexes_run_the_plain_or_query(store: SqliteStore) -> None:
    conn = connect(store.path)
    assert search.keyword_plan(conn, ["alpha", "beta"]) == ['"alpha" OR "beta"']
    conn.close()


def test_the_rarest_terms_anchor_the_split(store: SqliteStore, small_split: None) -> None:
    conn = connect(store.path)
    plan = search.keyword_plan(conn, [COMMON, SEMI, *RARE])
    assert plan == [
        '("alpha" OR "gamma") AND ("beta" OR "delta" OR "omega")',
        '("beta" OR "delta" OR "omega") NOT ("alpha" OR "gamma")',
    ]
    # Only frequent terms: the rarer one anchors.
    assert search.keyword_plan(conn, [COMMON, SEMI]) == [
        '("alpha") AND ("gamma")',
        '("gamma") NOT ("alpha")',
    ]
    # Rare terms that fit the budget together: one plain query.
    assert search.keyword_plan(conn, list(RARE)) == ['"beta" OR "delta" OR "omega"']
    conn.close()


def test_anchors_are_the_rarest_terms_within_the_budget() -> None:
    frequencies = {"what": 900, "flow": 40, "viscous": 8, "made": 300}
    assert fts.choose_anchors(frequencies, 50) == ["flow", "viscous"]
    assert fts.choose_anchors(frequencies, 10) == ["viscous"]
    assert fts.choose_anchors(frequencies, 0) == ["viscous"]  # always the rarest one
    assert fts.choose_anchors({"a": 5, "b": 5}, 5) == ["a"]  # ties: query order


@pytest.mark.parametrize("text", ["alpha beta", "alpha gamma delta omega", "gamma omega beta"])
def test_the_split_plan_scores_and_orders_like_plain_or(
    store: SqliteStore, small_split: None, text: str
) -> None:
    kb_id = store.get_kb("kb").id
    found = store.keyword_search([kb_id], text, 500)
    plain = _plain_or(store, text, 500)
    conn = connect(store.path)
    terms = fts.search_terms(text)
    rows = conn.execute(fts.indexed_rows_sql()).fetchone()[0]
    frequencies = search.term_frequencies(conn, terms, rows)
    anchors = set(fts.choose_anchors(frequencies, int(fts.ANCHOR_SHARE * rows)))
    assert len(search.keyword_plan(conn, terms)) == 2 and anchors != set(terms)
    conn.close()
    holding_rare = [
        (chunk_id, score)
        for chunk_id, score in plain
        if anchors & set(store.get_chunks([kb_id], [chunk_id])[0].text.split())
    ]
    assert [c for c, _ in found] == [c for c, _ in holding_rare]
    for (_, got), (_, want) in zip(found, holding_rare, strict=True):
        assert got == pytest.approx(want, rel=1e-9)
    limited = store.keyword_search([kb_id], text, 5)
    assert limited == found[:5]


def test_document_filters_apply_to_both_queries(store: SqliteStore, small_split: None) -> None:
    kb_id = store.get_kb("kb").id
    document = store.get_document(kb_id, "doc-0.txt")
    assert document is not None
    found = store.keyword_search([kb_id], "alpha beta delta", 50, [document.id])
    chunks = store.get_chunks([kb_id], [c for c, _ in found])
    assert chunks and {c.provenance.document_id for c in chunks} == {document.id}


def test_term_frequencies_are_counted_once_per_row_count(
    store: SqliteStore, small_split: None
) -> None:
    conn = connect(store.path)
    rows = conn.execute(fts.indexed_rows_sql()).fetchone()[0]
    assert search.term_frequencies(conn, [COMMON, "beta"], rows) == {COMMON: 240, "beta": 15}
    cached = conn.execute("SELECT term, df FROM temp.lorebase_term_stats").fetchall()
    assert sorted(cached) == [("alpha", 240), ("beta", 15)]
    conn.close()


@pytest.mark.parametrize(
    ("rows", "bucket"), [(0, 0), (99, 99), (100, 100), (1234, 1200), (1_049_999, 1_000_000)]
)
def test_statistics_buckets_keep_two_digits(rows: int, bucket: int) -> None:
    assert fts.stats_bucket(rows) == bucket


def test_merge_orders_by_score_then_rowid_and_drops_repeats() -> None:
    rows = [("a", 1.0, 5), ("b", 2.0, 9), ("c", 1.0, 2), ("a", 1.0, 5)]
    assert search.merge_ranked(rows, 10) == [("b", 2.0, 9), ("c", 1.0, 2), ("a", 1.0, 5)]
    assert search.merge_ranked(rows, 1) == [("b", 2.0, 9)]
