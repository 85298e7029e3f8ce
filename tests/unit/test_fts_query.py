"""FTS5 query building: user text is always escaped, never syntax."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.stopwords import stop_word_key
from lorebase.store.sqlite import fts


def test_terms_are_quoted_and_or_joined() -> None:
    assert fts.build_match_query("vacation policy") == '"vacation" OR "policy"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ERR_4711", '"ERR_4711"'),
        ("foo.bar", '"foo.bar"'),
        ("NEAR(a b)", '"NEAR(a" OR "b)"'),
        ("AND OR NOT", '"AND" OR "OR" OR "NOT"'),
        ("-x", '"-x"'),
        ("col:term", '"col:term"'),
        ("^start", '"^start"'),
        ('say "hi"', '"say" OR """hi"""'),
        ("pre*", '"pre*"'),
    ],
)
def test_syntax_characters_become_words(text: str, expected: str) -> None:
    assert fts.build_match_query(text) == expected


@pytest.mark.parametrize("text", ["", "   \t\n", '"', "*", "( ) : ^ - +", "…", "\x00"])
def test_nothing_searchable_gives_no_query(text: str) -> None:
    assert fts.build_match_query(text) is None


def test_duplicates_are_dropped_ignoring_case() -> None:
    assert fts.query_terms("Foo foo FOO bar foo") == ["Foo", "bar"]


def test_terms_are_capped() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    assert len(fts.query_terms(text)) == fts.MAX_QUERY_TERMS
    assert fts.query_terms(text)[0] == "w0"


def test_nul_and_lone_surrogates_are_removed() -> None:
    assert fts.query_terms("a\x00b c\ud800d") == ["a", "b", "cd"]


def test_headings_text_joins_the_trail() -> None:
    assert fts.headings_text(("Guide", "Setup")) == "Guide > Setup"
    assert fts.headings_text(()) == ""


def test_index_row_statements_select_by_known_columns_only() -> None:
    assert "WHERE document_id = ?" in fts.fts_insert_sql("document_id")
    assert "'delete'" in fts.fts_delete_sql("kb_id")
    with pytest.raises(ValueError):
        fts.fts_delete_sql("1 = 1 OR kb_id")


def test_search_sql_negates_bm25_with_the_named_weights() -> None:
    sql = fts.keyword_search_sql(with_documents=True)
    weights = ", ".join(str(w) for w in fts.COLUMN_WEIGHTS)
    assert f"-bm25(chunks_fts, {weights})" in sql
    assert len(fts.COLUMN_WEIGHTS) == len(fts.FTS_COLUMNS)
    assert sql.count("?") == 4
    assert fts.keyword_search_sql(with_documents=False).count("?") == 3


@pytest.fixture(scope="module")
def fts_table() -> Iterator[sqlite3.Connection]:
    """A bare FTS5 table with the store's tokenizer, to run built queries against."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{fts.FTS_TOKENIZER}')")
    conn.executemany(
        "INSERT INTO t (body) VALUES (?)",
        [("Configuração do servidor",), ("Naïve runs ERR_4711 nightly",), ("AND NEAR x",)],
    )
    yield conn
    conn.close()


def _match(conn: sqlite3.Connection, text: str) -> list[int]:
    query = fts.build_match_query(text)
    if query is None:
        return []
    return [row[0] for row in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,))]


def test_accents_fold_and_words_stem(fts_table: sqlite3.Connection) -> None:
    assert _match(fts_table, "configuracao") == [1]
    assert _match(fts_table, "naive") == [2]
    assert _match(fts_table, "running") == [2]
    assert _match(fts_table, "err_4711") == [2]
    assert _match(fts_table, "NEAR(") == [3]


@settings(max_examples=examples(200), deadline=None)
@given(st.text())
def test_any_text_builds_a_query_fts5_accepts(fts_table: sqlite3.Connection, text: str) -> None:
    _match(fts_table, text)  # raises sqlite3.OperationalError on a syntax error


def test_stop_words_are_left_out_when_other_words_remain() -> None:
    assert fts.build_match_query("where can THE guests leave their car") == (
        '"can" OR "guests" OR "leave" OR "car"'
    )
    # Question words are stop words too (Snowball's list): "do" no longer matches Portuguese.
    assert fts.search_terms("what to do if the main DB goes down") == ["main", "DB", "goes"]


def test_contractions_are_stop_words_and_the_words_they_resemble_are_not() -> None:
    assert fts.search_terms("We\u2019ll don't WELL shell id") == ["WELL", "shell", "id"]
    assert stop_word_key('"Don\u2019t!"') == "don't"


def test_a_query_of_stop_words_only_still_searches() -> None:
    assert fts.build_match_query("to be or not to be") == '"to" OR "be" OR "or" OR "not"'


def test_stop_words_go_before_the_term_cap() -> None:
    question = " ".join(["the"] * 5 + [f"word{n} of the" for n in range(40)])
    terms = fts.search_terms(question)
    assert len(terms) == fts.MAX_QUERY_TERMS
    assert all(term.startswith("word") for term in terms)


def test_importing_the_query_builder_loads_neither_numpy_nor_the_store() -> None:
    """``lorebase.store`` and ``lorebase.store.sqlite`` import their names lazily; the records
    and ``stored_chunk_id`` still import from the package."""
    code = (
        "import sys\n"
        "import lorebase.store.sqlite.fts\n"
        "from lorebase.store import stored_chunk_id\n"
        "import lorebase.store.base\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'"
        " or m == 'lorebase.store.sqlite.store')\n"
        "assert not heavy, heavy\n"
        "from lorebase.store import KnowledgeBase, Store\n"
        "from lorebase.store.sqlite import SqliteStore\n"
        "assert Store in SqliteStore.__mro__\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})
