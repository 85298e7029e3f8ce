"""Add + search through the real pipeline and a real SQLite file, with the fake embedder."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput, NotFound
from lorebase.settings import ServeSettings, Settings
from lorebase.store.states import DocumentState
from waiting import wait_until

HANDBOOK = """\
---
title: Staff Handbook
---
# Staff Handbook

Welcome to the company. This handbook describes our policies.

## Leave policy

### Vacation

Employees accrue vacation days at one and a half days per month. Unused vacation days carry
over to the next year up to ten days.

### Sick leave

Sick leave requires a note from a doctor after three consecutive days.

## Expenses

Travel expenses are reimbursed within thirty days when receipts are attached.
"""
ERRORS = """\
# Error codes

| code | meaning |
| --- | --- |
| ERR_4711 | the upstream quota was exhausted |
| ERR_1234 | the disk is full |
"""
PORTUGUESE = "# Configuração\n\nA configuração do sistema é feita no arquivo principal.\n"
CODE = '''def reset_password(user):
    """Send a password reset e-mail to the user."""
    return mailer.send(user.email, template="reset")
'''


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "handbook.md").write_text(HANDBOOK)
    (root / "errors.md").write_text(ERRORS)
    (root / "pt.md").write_text(PORTUGUESE)
    (root / "auth.py").write_text(CODE)
    (root / "empty.txt").write_text("")
    (root / "tool.exe").write_bytes(b"MZ")
    (root / ".private.md").write_text("# Secret\n\nhidden text\n")
    return root


def make(tmp_path: Path, embedder: FakeEmbedder | None = None) -> Lorebase:
    settings = Settings(data_dir=tmp_path / "data")
    return open_lorebase(settings=settings, embedder=embedder or FakeEmbedder())


@pytest.fixture
def lb(tmp_path: Path, corpus: Path) -> Iterator[Lorebase]:
    instance = make(tmp_path)
    instance.add([corpus], kb="team")
    yield instance
    instance.close()


def test_add_reports_what_happened(tmp_path: Path, corpus: Path) -> None:
    with make(tmp_path) as lb:
        report = lb.add([corpus], kb="team")
        assert (report.files, report.added, report.unchanged) == (6, 4, 0)
        assert sorted(report.failed) == [
            ("corpus/empty.txt", "empty"),
            ("corpus/tool.exe", "unsupported_format"),
        ]
        assert report.embedded > 0 and report.chunks >= 6
        kb = lb.kb("team")
        assert (kb.indexed, kb.failed) == (4, 2)  # a file lorebase does not read is listed too
        failed = lb.documents("team", DocumentState.FAILED)
        assert [(d.path, d.reason) for d in failed] == [
            ("corpus/empty.txt", "empty"),
            ("corpus/tool.exe", "unsupported_format"),
        ]


def test_unchanged_files_are_not_read_again_and_vectors_are_reused(
    tmp_path: Path, corpus: Path
) -> None:
    embedder = FakeEmbedder()
    with make(tmp_path, embedder) as lb:
        lb.add([corpus], kb="team")
        embedded = embedder.texts_embedded
        again = lb.add([corpus], kb="team")
        assert (again.unchanged, again.added, again.updated) == (6, 0, 0)
        assert embedder.texts_embedded == embedded
        # Same bytes, new mtime: read and hashed, but nothing re-embedded or rewritten.
        handbook = corpus / "policies" / "handbook.md"
        os.utime(handbook, (1, 1))
        assert lb.add([corpus], kb="team").unchanged == 6
        # A copy elsewhere reuses every vector; an edit embeds only what changed.
        (corpus / "copy.md").write_text(HANDBOOK)
        handbook.write_text(HANDBOOK.replace("thirty days", "fourteen days"))
        report = lb.add([corpus], kb="team")
        assert (report.added, report.updated) == (1, 1)
        assert report.embedded == 1
        assert embedder.texts_embedded == embedded + 1


def test_hybrid_search_cites_the_passage(lb: Lorebase) -> None:
    response = lb.search("how many vacation days carry over", kb="team")
    top = response.hits[0]
    assert top.provenance.path == "corpus/policies/handbook.md"
    assert top.provenance.trail == ("Staff Handbook", "Leave policy", "Vacation")
    assert top.provenance.citation().startswith(
        "corpus/policies/handbook.md › Staff Handbook › Leave policy"
    )
    assert top.provenance.line == 12  # the paragraph under "### Vacation"
    assert "vacation" in top.snippet.lower()
    assert set(top.scores) == {"keyword", "dense", "fused"}
    assert response.warnings == []
    assert {"keyword", "dense", "fuse", "hydrate", "total"} <= set(response.timings_ms)


def test_exact_identifiers_and_accents_are_found(lb: Lorebase) -> None:
    assert (
        lb.search("ERR_4711", kb="team", mode="keyword").hits[0].provenance.path
        == "corpus/errors.md"
    )
    hit = lb.search("configuracao", kb="team", mode="keyword").hits[0]
    assert hit.provenance.path == "corpus/pt.md"


def test_code_hits_carry_language_and_symbol(lb: Lorebase) -> None:
    hit = lb.search("password reset e-mail", kb="team").hits[0]
    where = hit.provenance
    assert (where.path, where.content_kind, where.language, where.symbol) == (
        "corpus/auth.py",
        "code",
        "python",
        "reset_password",
    )


def test_modes_and_filters(lb: Lorebase) -> None:
    dense = lb.search("vacation", kb="team", mode="dense")
    assert dense.hits and all(set(h.scores) == {"dense"} for h in dense.hits)
    keyword = lb.search("vacation", kb="team", mode="keyword")
    assert all(set(h.scores) == {"keyword"} for h in keyword.hits)
    errors_id = lb.search("ERR_4711", kb="team").hits[0].provenance.document_id
    only = lb.search("vacation days", kb="team", document_ids=[errors_id])
    assert {h.provenance.document_id for h in only.hits} <= {errors_id}


def test_neighbors_come_from_the_same_document(lb: Lorebase) -> None:
    hit = lb.search("sick leave doctor note", kb="team", neighbors=1).hits[0]
    assert hit.before or hit.after
    assert all(n.ordinal != 0 or hit.before == () for n in hit.after)


def test_embedder_down_answers_by_keyword_with_a_warning(tmp_path: Path, corpus: Path) -> None:
    with make(tmp_path) as lb:
        lb.add([corpus], kb="team")
    with make(tmp_path, FakeEmbedder(unavailable=True)) as down:
        response = down.search("vacation days", kb="team")
        assert response.hits
        assert response.mode.value == "keyword"
        assert any(w.startswith("embedder_unavailable") for w in response.warnings)


def test_rerank_request_is_a_no_op_with_a_warning(lb: Lorebase) -> None:
    response = lb.search("vacation", kb="team", rerank=True)
    assert any(w.startswith("reranker_unavailable") for w in response.warnings)


def test_embedder_down_during_add_stops_and_resumes(tmp_path: Path, corpus: Path) -> None:
    with make(tmp_path, FakeEmbedder(unavailable=True)) as lb:
        report = lb.add([corpus], kb="team")
        assert report.stopped and "embed" in report.stopped.lower()
        assert lb.kb("team").indexed == 0
    with make(tmp_path) as lb:
        report = lb.add([corpus], kb="team")
        assert report.added == 4


def test_bad_requests_are_invalid_input(lb: Lorebase) -> None:
    for kwargs in (
        {"top_k": 0},
        {"top_k": 101},
        {"neighbors": 3},
        {"mode": "fuzzy"},
        {"fusion": "magic"},
    ):
        with pytest.raises(InvalidInput):
            lb.search("vacation", kb="team", **kwargs)
    with pytest.raises(InvalidInput):
        lb.search("   ", kb="team")
    with pytest.raises(NotFound):
        lb.search("vacation", kb="nope")


def test_knowledge_bases_are_kept_apart(lb: Lorebase, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Note\n\nThe vacation calendar is on the wiki.\n")
    lb.add([other], kb="personal")
    hits = lb.search("vacation", kb="personal").hits
    assert {h.provenance.knowledge_base for h in hits} == {"personal"}
    team_doc = lb.search("vacation", kb="team").hits[0].provenance.document_id
    assert lb.search("vacation", kb="personal", document_ids=[team_doc]).hits == []
    with pytest.raises(NotFound):
        lb.read("personal", team_doc)
    both = lb.search("vacation", kb=["team", "personal"]).hits
    assert {h.provenance.knowledge_base for h in both} == {"team", "personal"}


def test_read_returns_a_window_of_the_extracted_text(lb: Lorebase) -> None:
    hit = lb.search("vacation", kb="team").hits[0]
    where = hit.provenance
    text = lb.read("team", where.document_id, start=where.start, max_chars=where.end - where.start)
    assert text == hit.text


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.text(min_size=1, max_size=80).filter(lambda q: q.strip()))
def test_any_query_answers_without_raising(lb: Lorebase, query: str) -> None:
    for mode in ("hybrid", "keyword"):
        lb.search(query, kb="team", mode=mode)


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "AND", "OR NOT", "title:x", "-vacation"])
def test_fts_syntax_is_read_as_words(lb: Lorebase, query: str) -> None:
    lb.search(query, kb="team", mode="keyword")


def test_nothing_indexed_or_searched_reaches_a_log(
    tmp_path: Path, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with make(tmp_path) as lb:
        lb.add([corpus], kb="team")
        lb.search("secret query about vacation", kb="team")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for needle in ("vacation", "Employees accrue", "ERR_4711", "secret query"):
        assert needle not in logged


@contextmanager
def parts_seen(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> Iterator[tuple[Lorebase, Callable[[str], dict[str, set[str]]]]]:
    """A base searched by a service of one of ``processes`` answering processes, and what
    tells, for a search by a mode, the threads its keyword arm and its question's language
    ran on."""
    settings = Settings(data_dir=tmp_path / "data", serve=ServeSettings(processes=processes))
    with open_lorebase(settings=settings, embedder=FakeEmbedder(languages=frozenset({"en"}))) as lb:
        lb.add([corpus], kb="team")
        store, detector = lb.searcher.store, lb.searcher.dense.languages
        keyword_search, detect = store.keyword_search, detector.detect
        seen: dict[str, set[str]] = {"keyword": set(), "language": set()}

        def keyword_seen(*args: Any, **kwargs: Any) -> Any:
            seen["keyword"].add(threading.current_thread().name)
            return keyword_search(*args, **kwargs)

        def detect_seen(*args: Any, **kwargs: Any) -> Any:
            seen["language"].add(threading.current_thread().name)
            return detect(*args, **kwargs)

        monkeypatch.setattr(store, "keyword_search", keyword_seen)
        monkeypatch.setattr(detector, "detect", detect_seen)

        def threads(mode: str) -> dict[str, set[str]]:
            for names in seen.values():
                names.clear()
            assert lb.search("vacation days", kb="team", mode=mode).hits
            return {part: set(names) for part, names in seen.items()}

        yield lb, threads


@contextmanager
def another_search_waiting(lb: Lorebase) -> Iterator[None]:
    """This thread holding the search turn (its searches keep it: a search inside a search)
    while another search waits for it."""
    turns = lb.searcher.turns
    with turns.turn():

        def another_search() -> None:
            with turns.turn():
                pass

        waiting = threading.Thread(target=another_search)
        waiting.start()
        wait_until(turns.crowded, 5, what="another search to wait for a turn")
        yield
    waiting.join(5)
    assert not waiting.is_alive()


def test_a_search_alone_runs_its_keyword_arm_and_language_beside_it(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid search tells both on other threads while it embeds its question; a search by
    keyword alone has nothing to overlap and runs its arm itself."""
    here = threading.current_thread().name
    with parts_seen(tmp_path, corpus, monkeypatch, os.cpu_count() or 1) as (_, threads):
        alone = threads("hybrid")
        assert alone["keyword"] and alone["language"]
        assert here not in alone["keyword"] | alone["language"]
        assert threads("keyword")["keyword"] == {here}


def test_with_the_cores_busy_with_searches_a_search_runs_them_itself(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As many processes answer as there are cores and another search waits here: the other
    cores are searching, and other threads would only add hand-overs."""
    here = threading.current_thread().name
    with (
        parts_seen(tmp_path, corpus, monkeypatch, os.cpu_count() or 1) as (lb, threads),
        another_search_waiting(lb),
    ):
        assert threads("hybrid") == {"keyword": {here}, "language": {here}}


def test_one_process_keeps_its_other_threads_while_searches_wait(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With fewer processes than cores a search's other threads are what uses the rest."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: a single process already takes every core")
    here = threading.current_thread().name
    with parts_seen(tmp_path, corpus, monkeypatch, 1) as (lb, threads), another_search_waiting(lb):
        seen = threads("hybrid")
        assert seen["keyword"] and here not in seen["keyword"] | seen["language"]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_keyword_arm_that_fails_fails_the_search_with_its_error(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """On the search's own thread (keyword alone) or beside it (hybrid), the store's error is
    the search's, and the next search answers."""
    with make(tmp_path) as lb:
        lb.add([corpus], kb="team")
        store = lb.searcher.store

        def failing(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        with monkeypatch.context() as patched:
            patched.setattr(store, "keyword_search", failing)
            with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
                lb.search("vacation days", kb="team", mode=mode)
        assert lb.search("vacation days", kb="team", mode=mode).hits
