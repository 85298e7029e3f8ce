"""Index versions and the time left, as pure parts: the key a document records
(:func:`versions_key`), which documents are stale (:meth:`RunningVersions.stale`, and the SQL
condition the store counts them with, checked against it on a real SQLite table), the time left
(:func:`seconds_left`, :func:`pass_seconds_left`), and how ``status``, the API body and the
metrics say them."""

from __future__ import annotations

import math
import re
import sqlite3

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest

from lorebase.analysis import ANALYSIS_VERSION
from lorebase.api.convert import kb_out
from lorebase.api.metrics import Metrics
from lorebase.chunk import CHUNKER_VERSION
from lorebase.cli.render import status_blocks
from lorebase.formats import FORMATS
from lorebase.ingest.progress import left_phrase, pass_seconds_left, seconds_left
from lorebase.ingest.versions import (
    UNREAD_EXTRACTOR,
    running_versions,
    versions_key,
    versions_of,
)
from lorebase.settings import ChunkSettings
from lorebase.store.base import DocumentRecord, KnowledgeBase, RunningVersions
from lorebase.store.records import stale_sql
from lorebase.store.states import DocumentState, KbState, Scope

versions = st.integers(0, 10_000)
KEY = re.compile(r"x(\d+)\.c(\d+)\.a(\d+)")


# -- the key a document records ----------------------------------------------------------------
@given(versions, versions, versions)
def test_a_key_names_its_three_versions(extractor: int, chunker: int, analysis: int) -> None:
    key = versions_key(extractor, chunker, analysis)
    found = KEY.fullmatch(key)
    assert found is not None
    assert tuple(int(g) for g in found.groups()) == (extractor, chunker, analysis)


@given(st.tuples(versions, versions, versions), st.tuples(versions, versions, versions))
def test_different_versions_give_different_keys(
    one: tuple[int, int, int], other: tuple[int, int, int]
) -> None:
    assert (versions_key(*one) == versions_key(*other)) == (one == other)


def test_the_running_versions_cover_every_format() -> None:
    running = running_versions()
    assert set(running.by_kind) == {fmt.kind for fmt in FORMATS}
    for fmt in FORMATS:
        assert versions_of(fmt.kind) == versions_key(fmt.version, CHUNKER_VERSION, ANALYSIS_VERSION)
    assert versions_of("no-such-kind") == running.other == versions_key(UNREAD_EXTRACTOR)
    assert running_versions() is running  # built once


# -- which documents are stale ------------------------------------------------------------------
KINDS = ("md", "pdf", "txt", "other")
RUNNING = RunningVersions({"md": "x2.c2.a2", "pdf": "x3.c2.a2", "txt": "x2.c2.a2"}, "x0.c2.a2")
recorded = st.sampled_from([None, "x2.c2.a2", "x3.c2.a2", "x0.c2.a2", "x1.c2.a2", "x2.c1.a2"])
states = st.sampled_from(list(DocumentState))


def _record(kind: str, state: DocumentState, versions: str | None, n: int = 0) -> DocumentRecord:
    return DocumentRecord(
        id=f"{n:032}",
        kb_id=1,
        path=f"d{n}.{kind}",
        kind=kind,
        size=1,
        content_hash="h",
        state=state,
        mtime=None,
        title=None,
        page_count=None,
        reason=None,
        chunk_count=0,
        identity_key=None,
        settings_key=None,
        updated_at=0.0,
        versions=versions,
    )


@given(st.sampled_from(KINDS), states, recorded)
def test_stale_means_settled_and_made_by_other_versions(
    kind: str, state: DocumentState, versions: str | None
) -> None:
    document = _record(kind, state, versions)
    settled = state in (DocumentState.INDEXED, DocumentState.FAILED)
    assert RUNNING.stale(document) == (settled and versions != RUNNING.of(kind))
    if settled and versions is None:
        assert RUNNING.stale(document)  # made before versions were recorded
    if versions == RUNNING.of(kind):
        assert not RUNNING.stale(document)


@given(st.lists(st.tuples(st.sampled_from(KINDS), states, recorded), max_size=30))
def test_the_store_condition_is_the_same_as_the_rule(
    rows: list[tuple[str, DocumentState, str | None]],
) -> None:
    """``stale_sql`` on a real SQLite table selects exactly the rows ``stale`` names."""
    condition, params = stale_sql(RUNNING)
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE documents (n INTEGER, kind TEXT, state TEXT, versions TEXT)")
        db.executemany(
            "INSERT INTO documents VALUES (?, ?, ?, ?)",
            [(n, kind, state.value, v) for n, (kind, state, v) in enumerate(rows)],
        )
        found = {n for (n,) in db.execute(f"SELECT n FROM documents WHERE {condition}", params)}
    expected = {
        n for n, (kind, state, v) in enumerate(rows) if RUNNING.stale(_record(kind, state, v, n))
    }
    assert found == expected


def test_the_store_condition_without_any_format() -> None:
    condition, params = stale_sql(RunningVersions({}, "x0.c1.a1"))
    assert params == ["x0.c1.a1"] and "CASE" not in condition
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE documents (kind TEXT, state TEXT, versions TEXT)")
        db.executemany(
            "INSERT INTO documents VALUES (?, ?, ?)",
            [("md", "indexed", "x0.c1.a1"), ("md", "indexed", None), ("md", "pending", None)],
        )
        (count,) = db.execute(
            f"SELECT count(*) FROM documents WHERE {condition}", params
        ).fetchone()
    assert count == 1


# -- the time left ------------------------------------------------------------------------------
work = st.floats(-1e6, 1e9, allow_nan=False)
rates = st.floats(1e-3, 1e6, allow_nan=False)


@given(work, rates)
def test_the_time_left_is_never_negative(left: float, rate: float) -> None:
    found = seconds_left(left, rate)
    assert found is not None and found >= 0.0
    if left <= 0:
        assert found == 0.0


@given(work, work, rates)
def test_more_work_never_takes_less_time(one: float, other: float, rate: float) -> None:
    less, more = sorted((one, other))
    shorter, longer = seconds_left(less, rate), seconds_left(more, rate)
    assert shorter is not None and longer is not None and shorter <= longer


@given(work, st.one_of(st.none(), st.floats(max_value=0.0), st.just(math.nan)))
def test_no_time_left_without_a_rate(left: float, rate: float | None) -> None:
    assert seconds_left(left, rate) is None


def _kb(state: KbState = KbState.INDEXING, **pace: float | int | None) -> KnowledgeBase:
    return KnowledgeBase(
        id=7,
        name="notes",
        description="",
        scope=Scope.GLOBAL,
        owner=None,
        chunk_settings=ChunkSettings(),
        identity_key=None,
        created_at=0.0,
        state=state,
        progress_done=40,
        progress_total=120,
        **pace,  # type: ignore[arg-type]
    )


def test_a_pass_time_left_comes_from_what_it_recorded() -> None:
    assert pass_seconds_left(_kb(progress_rate=10.0, progress_left=1850)) == 185.0
    assert pass_seconds_left(_kb(progress_rate=None, progress_left=1850)) is None  # measuring
    assert pass_seconds_left(_kb(progress_rate=10.0, progress_left=None)) is None
    assert pass_seconds_left(_kb(KbState.READY, progress_rate=10.0, progress_left=1850)) is None


def test_the_time_left_in_words() -> None:
    assert left_phrase(None) == "estimating time left"
    assert left_phrase(0.4) == "finishing"
    assert left_phrase(42) == "about 42 s left"
    assert left_phrase(185) == "about 3 min 05 s left"
    assert left_phrase(7800) == "about 2 h 10 min left"


# -- how the surfaces say them ------------------------------------------------------------------
def test_status_shows_the_time_left_and_the_stale_documents() -> None:
    running = _kb(progress_rate=10.0, progress_left=1850)
    [block] = status_blocks([running], {}, stale={running.id: 12})
    text = block.plain
    assert "indexing 40/120 · about 3 min 05 s left" in text
    assert "12 documents made by an older version — `lorebase sync` reads them again" in text
    [quiet] = status_blocks([_kb(KbState.READY)], {}, stale={})
    assert "older version" not in quiet.plain and "left" not in quiet.plain
    [measuring] = status_blocks([_kb()], {}, stale={running.id: 1})
    assert "estimating time left" in measuring.plain
    assert "1 document made by an older version" in measuring.plain


def test_the_api_body_carries_them() -> None:
    body = kb_out(_kb(progress_rate=3.0, progress_left=10), stale=5)
    assert (body.seconds_left, body.stale_documents) == (3.3, 5)
    assert (body.progress_done, body.progress_total) == (40, 120)
    idle = kb_out(_kb(KbState.READY, progress_rate=3.0, progress_left=10))
    assert (idle.seconds_left, idle.stale_documents) == (None, 0)


def test_the_metrics_name_bases_by_id() -> None:
    metrics = Metrics(
        lambda: {},
        lambda: 0,
        lambda: (0, 0),
        stale_documents=lambda: {3: 12, 9: 1},
        seconds_left=lambda: {3: 185.0},
    )
    text = generate_latest(metrics.registry).decode()
    assert 'lorebase_stale_documents{kb="3"} 12.0' in text
    assert 'lorebase_stale_documents{kb="9"} 1.0' in text
    assert 'lorebase_pass_seconds_left{kb="3"} 185.0' in text
    assert 'lorebase_pass_seconds_left{kb="9"}' not in text
    bare = generate_latest(Metrics(lambda: {}, lambda: 0, lambda: (0, 0)).registry).decode()
    assert "# TYPE lorebase_stale_documents gauge" in bare
    assert "lorebase_stale_documents{" not in bare
