"""The ``LexicalIndex`` role: keyword search. Run against every backend."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budget import examples
from contract.store_contract import (
    BACKENDS,
    Backend,
    ids_of,
    put,
)
from lorebase.store.base import KnowledgeBase, Store


# -- keyword search ----------------------------------------------------------------------------
def test_keyword_search_folds_accents_and_stems(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "pt.md", ["Configuração do servidor"])
    put(store, kb, "en.md", ["A naïve approach: the job runs nightly"])
    assert len(store.keyword_search([kb.id], "configuracao", 5)) == 1
    assert len(store.keyword_search([kb.id], "CONFIGURAÇÃO", 5)) == 1
    assert len(store.keyword_search([kb.id], "naive", 5)) == 1
    assert len(store.keyword_search([kb.id], "running", 5)) == 1


def test_keyword_search_finds_identifiers_titles_and_paths(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "docs/handbook.docx", ["Nothing to see"], title="Employee guide")
    put(store, kb, "src/errors.py", ["raise Failure(ERR_4711)", "other"], symbol="raise_it")
    (err,) = store.keyword_search([kb.id], "ERR_4711", 5)
    assert store.get_chunks([kb.id], [err[0]])[0].text == "raise Failure(ERR_4711)"
    assert len(store.keyword_search([kb.id], "handbook", 5)) == 1
    assert len(store.keyword_search([kb.id], "employee", 5)) == 1
    assert len(store.keyword_search([kb.id], "raise_it", 5)) == 2  # symbol column


def test_heading_match_outranks_body_match(store: Store) -> None:
    kb = store.create_kb("docs")
    put(
        store,
        kb,
        "policy.md",
        ["Ten days per year, booked in advance.", "Ask your manager about vacation first."],
        trails=[("Policy", "Vacation"), ("Policy", "Approvals")],
    )
    hits = store.keyword_search([kb.id], "vacation", 5)
    top = store.get_chunks([kb.id], [hits[0][0]])[0]
    assert top.provenance.trail == ("Policy", "Vacation") and len(hits) == 2
    assert hits[0][1] > hits[1][1] > 0


def test_keyword_search_ranks_limits_and_filters_documents(store: Store) -> None:
    kb = store.create_kb("docs")
    a, _ = put(store, kb, "a.md", ["zebra zebra zebra", "zebra alpha"])
    b, _ = put(store, kb, "b.md", ["zebra", "tulip"])
    hits = store.keyword_search([kb.id], "zebra", 10)
    assert len(hits) == 3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert len(store.keyword_search([kb.id], "zebra", 2)) == 2
    assert store.keyword_search([kb.id], "zebra", 0) == []
    only_b = store.keyword_search([kb.id], "zebra tulip", 10, [b.id])
    assert {c.provenance.path for c in store.get_chunks([kb.id], ids_of(only_b))} == {"b.md"}
    assert len(only_b) == 2
    assert store.keyword_search([kb.id], "zebra", 10, []) == []
    assert len(store.keyword_search([kb.id], "zebra", 10, [a.id, b.id, "unknown"])) == 3


HOSTILE = [
    '"',
    "*",
    "NEAR(",
    "AND",
    "OR",
    "NOT",
    "title:x",
    "",
    "   ",
    "^",
    "-",
    "a AND",
    "NEAR(zebra alpha, 2)",
    '"zebra',
    "zebra*",
    "col:zebra",
    "\x00",
    "{title}: zebra",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(store: Store, query: str) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra alpha and or not near title"])
    assert isinstance(store.keyword_search([kb.id], query, 5), list)


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text())
def test_keyword_search_never_raises(populated: tuple[Store, KnowledgeBase], query: str) -> None:
    store, kb = populated
    for chunk_id, score in store.keyword_search([kb.id], query, 5):
        assert isinstance(chunk_id, str) and score > 0


@pytest.fixture
def populated(store: Store) -> tuple[Store, KnowledgeBase]:
    kb = store.create_kb("docs")
    put(store, kb, "docs/a.md", ["Configuração do servidor", "ERR_4711 AND NEAR(x)"], title="Ä")
    put(store, kb, "b.py", ["def run(): pass"], symbol="run", trails=[("mod", "run")])
    return store, kb


def test_a_base_is_ranked_by_its_own_statistics(store: Store, backend: Backend) -> None:
    """A small base's scores do not move when another base fills with its query's words
    (FTS5 keeps one set of statistics per table: skipped there)."""
    if backend is BACKENDS["sqlite-fts5"]:
        pytest.skip("FTS5 keeps BM25 statistics per table, not per base")
    small = store.create_kb("small")
    put(store, small, "a.md", ["glacier melt rates", "alpine glacier survey"])
    put(store, small, "b.md", ["river delta sediment"])
    before = store.keyword_search([small.id], "glacier sediment", 10)
    big = store.create_kb("big")
    for n in range(30):
        put(store, big, f"g{n}.md", [f"glacier glacier note {n}", f"glacier survey {n}"])
    after = store.keyword_search([small.id], "glacier sediment", 10)
    assert ids_of(after) == ids_of(before)
    assert [round(s, 4) for _, s in after] == [round(s, 4) for _, s in before]
    # "sediment" is rarer in the small base than "glacier": its chunk leads.
    assert len(before) == 3
    assert store.get_chunks([small.id], [before[0][0]])[0].text == "river delta sediment"


# -- the keyword ceiling -----------------------------------------------------------------------
def test_the_ceiling_is_what_matching_every_term_could_score(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["glacier melt rates", "alpine glacier survey", "river delta"])
    put(store, kb, "b.md", ["sediment transport in a river delta"])
    ceiling = store.keyword_ceiling([kb.id], "glacier sediment")
    hits = store.keyword_search([kb.id], "glacier sediment", 10)
    assert ceiling > 0 and all(0 < score <= ceiling for _, score in hits)
    # A word no chunk holds raises the ceiling (at the largest idf), not the scores.
    wider = store.keyword_ceiling([kb.id], "glacier sediment zyxwvut")
    assert wider > ceiling
    assert store.keyword_search([kb.id], "glacier sediment zyxwvut", 10) == hits
    assert store.keyword_ceiling([kb.id], "") == 0.0
    assert store.keyword_ceiling([kb.id], "!!! ???") == 0.0
    assert store.keyword_ceiling([], "glacier") == 0.0


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(query=st.text(max_size=80))
def test_no_hit_scores_above_the_ceiling(
    populated: tuple[Store, KnowledgeBase], query: str
) -> None:
    store, kb = populated
    ceiling = store.keyword_ceiling([kb.id], query)
    for _, score in store.keyword_search([kb.id], query, 10):
        assert score <= ceiling * (1 + 1e-6)
