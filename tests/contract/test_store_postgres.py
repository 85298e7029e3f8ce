"""What the contract cannot say about the PostgreSQL store: migrations racing, the HNSW path
against the exact one, BM25 statistics per set of bases (and against SQLite's FTS5), the
``ts_rank_cd`` variant, and text PostgreSQL cannot hold."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from contract.store_contract import IDENTITY, ids_of, put
from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict
from lorebase.store.base import Store
from lorebase.store.postgres import PostgresStore, dense, lexical
from lorebase.store.postgres.schema import MIGRATIONS, MIGRATIONS_TABLE, migrate
from lorebase.store.terms import BM25_B, BM25_K1


@pytest.fixture
def pg(postgres_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(postgres_url) as store:
        yield store


# -- migrations ----------------------------------------------------------------------------------
def test_stores_opening_a_fresh_database_at_once_migrate_it_once(postgres_url: str) -> None:
    from lorebase.store.postgres.database import PostgresDatabase

    count = 4
    databases = [PostgresDatabase(postgres_url) for _ in range(count)]
    barrier = threading.Barrier(count)
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def open_one(database: PostgresDatabase) -> None:
        try:
            barrier.wait(timeout=30)
            applied.append(migrate(database))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_one, args=(db,)) for db in databases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        numbers = sorted(n for done in applied for n in done)
        assert numbers == [m.number for m in MIGRATIONS]  # each applied once, by someone
        with databases[0].read() as conn:
            recorded = conn.execute(f"SELECT number FROM {MIGRATIONS_TABLE} ORDER BY 1")
            assert [row[0] for row in recorded] == numbers
        assert migrate(databases[0]) == []
    finally:
        for database in databases:
            database.close()


def test_processes_opening_a_fresh_database_at_once_all_succeed(postgres_url: str) -> None:
    code = (
        "import sys\n"
        "from lorebase.store.postgres import PostgresStore\n"
        "PostgresStore(sys.argv[1]).close()\n"
    )
    env_path = str(Path(__file__).resolve().parents[2] / "src")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, postgres_url],
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    with PostgresStore(postgres_url) as store, store.database.read() as conn:
        rows = conn.execute(f"SELECT count(*) FROM {MIGRATIONS_TABLE}").fetchone()
    assert rows[0] == len(MIGRATIONS)


def test_a_newer_schema_is_refused(pg: PostgresStore, postgres_url: str) -> None:
    with pg.database.write() as conn:
        conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (number, name) VALUES (999, 'x')")
    with pytest.raises(Conflict, match="upgrade lorebase"):
        PostgresStore(postgres_url)


# -- dense search: HNSW against the exact scan ---------------------------------------------------
WIDE = EmbedderIdentity(model="wide-model", digest="d" * 64, dim=32)


def _random_units(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((rows, dim)).astype(np.float32)
    units: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return units


def test_the_hnsw_path_finds_what_the_exact_scan_finds(pg: PostgresStore) -> None:
    rng = np.random.default_rng(7)
    a, b = pg.create_kb("a"), pg.create_kb("b")
    for kb, documents in ((a, 20), (b, 8)):
        for n in range(documents):
            vectors = _random_units(rng, 100, WIDE.dim)
            texts = [f"{kb.name} {n} {i}" for i in range(100)]
            put(pg, kb, f"{n}.md", texts, vectors=vectors, identity=WIDE)
    hnsw = PostgresStore(pg.database, exact_search_rows=0)  # every search through the index
    queries = _random_units(rng, 20, WIDE.dim)
    overlap = []
    for query in queries:
        for bases in ([a.id], [b.id], [a.id, b.id]):
            exact = pg.dense_search(bases, WIDE, query, 10)
            approximate = hnsw.dense_search(bases, WIDE, query, 10)
            assert len(exact) == len(approximate) == 10
            overlap.append(len(set(ids_of(exact)) & set(ids_of(approximate))) / 10)
            # Scores are exact in both (re-ranked with the float32 vectors).
            common = dict(exact).keys() & dict(approximate).keys()
            for chunk_id in common:
                assert dict(exact)[chunk_id] == pytest.approx(dict(approximate)[chunk_id])
    assert np.mean(overlap) >= 0.95
    with pg.database.read() as conn:  # the HNSW query goes through the identity's index
        identity_id = conn.execute("SELECT id FROM identities WHERE key = %s", (WIDE.key,))
        (identity_id,) = identity_id.fetchone()
        for setting in dense.hnsw_settings_sql(40):
            conn.execute(setting)
        plan = conn.execute(
            "EXPLAIN " + dense.hnsw_candidates_sql(identity_id, WIDE.dim),
            {"kbs": [b.id], "query": queries[0], "n": 40},
        ).fetchall()
    assert dense.index_name(identity_id) in "\n".join(row[0] for row in plan)
    # A base holding a small share of the identity's vectors still gets full results.
    assert len(hnsw.dense_search([b.id], WIDE, queries[0], 50)) == 50


def test_an_identity_gets_its_partial_index_when_first_used(pg: PostgresStore) -> None:
    kb = pg.create_kb("docs")
    pg.set_kb_identity(kb.id, IDENTITY)
    with pg.database.read() as conn:
        rows = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'vectors_hnsw_%'"
        ).fetchall()
    assert len(rows) == 1
    assert "hnsw" in rows[0][0] and "halfvec(8)" in rows[0][0] and "identity_id = " in rows[0][0]


# -- BM25 ----------------------------------------------------------------------------------------
def _bm25(tf: float, df: int, n: int, length: int, average: float) -> float:
    idf = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
    return idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))


def test_a_small_base_is_ranked_with_its_own_statistics(pg: PostgresStore) -> None:
    big, tiny = pg.create_kb("big"), pg.create_kb("tiny")
    for n in range(20):
        put(pg, big, f"{n}.md", [f"zebra common words number {n}"])
    put(pg, tiny, "a.md", ["zebra stripes"])
    put(pg, tiny, "b.md", ["lions and tigers"])
    put(pg, tiny, "c.md", ["tigers only here"])
    # Tokens: title none, path "a md" (2) + body; lengths 4, 5, 5 in the tiny base.
    (hit,) = pg.keyword_search([tiny.id], "zebra", 10)
    assert hit[1] == pytest.approx(_bm25(1, 1, 3, 4, 14 / 3), rel=1e-5)
    both = dict(pg.keyword_search([big.id, tiny.id], "zebra", 30))
    assert len(both) == 21
    average = (20 * 7 + 14) / 23  # the big base's chunks hold 7 tokens each ("0 md" + 5)
    assert both[hit[0]] == pytest.approx(_bm25(1, 21, 23, 4, average), rel=1e-5)
    assert both[hit[0]] < hit[1]  # a word everywhere in the big base weighs little there


def test_bm25_scores_match_sqlite(pg: PostgresStore, tmp_path: Path) -> None:
    """The same documents in both backends score alike (FTS5's bm25 is the reference)."""
    from lorebase.store.sqlite import SqliteStore

    texts = {
        "guide.md": (["the engine starts quickly", "engines and pumps"], "Engine guide"),
        "pumps.md": (["pump pressure and flow", "the flow of water"], None),
        "notes/water.md": (["water water everywhere", "nothing here"], "Water"),
    }
    with SqliteStore(tmp_path / "lorebase.db", lexical="fts5") as lite:
        stores: list[Store] = [lite, pg]
        for store in stores:
            kb = store.create_kb("docs")
            for path, (chunks, title) in texts.items():
                put(store, kb, path, chunks, title=title, trails=[("Intro",)] * len(chunks))
        for query in ("engine", "water flow", "pump pressure", "guide intro", "notes"):
            reference = _by_text(lite, query)
            got = _by_text(pg, query)
            assert got.keys() == reference.keys()
            for text, score in reference.items():
                assert got[text] == pytest.approx(score, rel=1e-4), (query, text)


def _by_text(store: Store, query: str) -> dict[str, float]:
    kb = store.get_kb("docs")
    hits = store.keyword_search([kb.id], query, 20)
    chunks = store.get_chunks([kb.id], ids_of(hits))
    return {chunk.text: score for chunk, (_, score) in zip(chunks, hits, strict=True)}


def test_ts_rank_cd_ranks_the_same_matches(pg: PostgresStore) -> None:
    kb = pg.create_kb("docs")
    put(pg, kb, "a.md", ["zebra zebra zebra", "zebra alpha"])
    put(pg, kb, "b.md", ["zebra", "tulip"])
    simple = PostgresStore(pg.database, ranking="ts_rank_cd")
    bm25, cover = (
        pg.keyword_search([kb.id], "zebra", 10),
        simple.keyword_search([kb.id], "zebra", 10),
    )
    assert set(ids_of(bm25)) == set(ids_of(cover)) and len(cover) == 3
    assert all(score > 0 for _, score in cover)
    with pytest.raises(ValueError):
        PostgresStore(pg.database, ranking="tf-idf")  # type: ignore[arg-type]


def test_the_anchored_plan_scores_what_it_keeps_as_the_plain_plan_does(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a large selection only chunks holding a rare term are scored, each exactly as the
    plain plan scores it (the frequent terms' frequencies counted or estimated, never left
    out of a score); chunks holding only frequent terms are what it leaves out."""
    kb = pg.create_kb("docs")
    for n in range(40):
        words = "alpha beta common words" + (" zebra" if n % 10 == 0 else "")
        put(pg, kb, f"{n}.md", [words, f"beta only {n}"])
    plain = dict(pg.keyword_search([kb.id], "alpha beta zebra", 100))
    monkeypatch.setattr(lexical, "anchor_budget", lambda rows: 5)  # as if the base were huge
    anchored = dict(pg.keyword_search([kb.id], "alpha beta zebra", 100))
    assert len(anchored) == 4 < len(plain) == 80  # the four chunks holding "zebra"
    for chunk_id, score in anchored.items():
        assert score == pytest.approx(plain[chunk_id], rel=1e-6)
    assert sorted(plain, key=lambda c: -plain[c])[:4] == list(anchored)
    with pg.database.write() as conn:  # statistics now estimate the frequent terms
        conn.execute("ANALYZE chunks")
    estimated = pg.keyword_search([kb.id], "alpha beta zebra", 100)
    assert [chunk_id for chunk_id, _ in estimated] == list(anchored)


def test_anchors_are_the_rarest_terms_within_the_budget() -> None:
    dfs = {1: 7000.0, 2: 12.0, 3: 40.0, 4: 60.0}
    plan = lexical.plan_anchors(dfs, budget=100)
    assert plan == lexical.AnchorPlan([2, 3], [7000.0, 12.0, 40.0, 60.0], None)
    assert lexical.plan_anchors({1: 12.0, 2: 40.0}, budget=100) is None  # the plain plan
    frequent = lexical.plan_anchors({1: 30_000.0, 2: 20_000.0}, budget=1000)
    assert frequent is not None  # every term frequent: the shortest chunks of the rarest
    assert frequent.anchors == [2] and frequent.prefilter == lexical.MAX_SCORED_ROWS
    alone = lexical.plan_anchors({1: 30_000.0}, budget=1000)
    assert alone is not None and alone.prefilter == lexical.MAX_SCORED_ROWS


def test_text_postgresql_cannot_hold_is_stored_safely(pg: PostgresStore) -> None:
    kb = pg.create_kb("docs")
    record, _ = put(pg, kb, "nul.md", ["zebra\x00stripes"], title="A\x00B")
    (hit,) = pg.keyword_search([kb.id], "stripes", 5)
    assert pg.get_chunks([kb.id], [hit[0]])[0].text == "zebra\ufffdstripes"
    assert pg.document_text(kb.id, record.id) == "zebra\x00stripes"  # kept as bytes


def test_importing_the_backend_loads_no_driver() -> None:
    code = (
        "import sys\n"
        "import lorebase.store.postgres\n"
        "assert 'psycopg' not in sys.modules and 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_documents_awaiting_vectors_have_a_partial_index(pg: PostgresStore) -> None:
    """Migration 4: the keyword-only count of a hybrid search reads only those documents."""
    with pg.database.read() as conn:
        found = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'documents_keyword_only'"
        ).fetchone()
    assert found is not None
    assert "WHERE ((chunk_count > 0) AND (identity_key IS NULL))" in found[0]
