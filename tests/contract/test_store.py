"""The ``Store`` contract, run against every backend.

Each test takes ``store`` (a fresh, empty store) and, where it must look below the seam,
``backend`` (how to open one, count its rows, check its lexical index, or make a write fail
half-way). Only SQLite is wired up today; a PostgreSQL backend is one more entry in
``BACKENDS``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lorebase.embed.base import EmbedderIdentity
from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.settings import ChunkSettings
from lorebase.store import stored_chunk_id
from lorebase.store.base import DocumentState, KnowledgeBase, NewDocument, Scope, Store
from lorebase.types import Chunk, ContentKind

if TYPE_CHECKING:
    from lorebase.store.sqlite import SqliteStore

DIM = 8
IDENTITY = EmbedderIdentity(model="test-model", digest="a" * 64, dim=DIM)
OTHER_IDENTITY = EmbedderIdentity(model="other-model", digest="b" * 64, dim=DIM)
SETTINGS_KEY = ChunkSettings().key


# -- backends ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backend:
    """What the contract needs to know about one backend, beyond the ``Store`` seam."""

    open: Callable[[Path], Store]
    row_counts: Callable[[Store], dict[str, int]]
    """Rows in every table a document or base writes to (the reuse cache excepted)."""
    check_index: Callable[[Store], None]
    """Raise when the lexical index disagrees with the chunks it indexes."""
    after_chunks: Callable[[pytest.MonkeyPatch, Callable[[], None]], None]
    """Make ``replace_document`` call this hook once it has written chunks and index rows (in
    its transaction, before the vectors); a hook that raises makes the write fail half-way."""


def _sqlite(store: Store) -> SqliteStore:
    from lorebase.store.sqlite import SqliteStore

    assert isinstance(store, SqliteStore)
    return store


def _sqlite_row_counts(store: Store) -> dict[str, int]:
    tables = (
        "documents",
        "document_texts",
        "sections",
        "chunks",
        "vectors",
        "chunks_fts",
        "chunks_fts_docsize",  # one row per indexed chunk (segments may keep tombstones)
    )
    with _sqlite(store).database.read() as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables
        }
        counts["chunks_fts(index)"] = conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'zebra OR alpha OR tulip'"
        ).fetchone()[0]
    return counts


def _sqlite_check_index(store: Store) -> None:
    from lorebase.store.sqlite.fts import integrity_check_sql

    with _sqlite(store).database.write() as conn:
        conn.execute(integrity_check_sql())


def _sqlite_after_chunks(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    from lorebase.store.sqlite import writes

    original = writes.write_vectors

    def hooked(*args: object, **kwargs: object) -> None:
        hook()
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writes, "write_vectors", hooked)


def _open_sqlite(tmp_path: Path) -> Store:
    from lorebase.store.sqlite import SqliteStore

    return SqliteStore(tmp_path / "lorebase.db")


BACKENDS = {
    "sqlite": Backend(_open_sqlite, _sqlite_row_counts, _sqlite_check_index, _sqlite_after_chunks)
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    opened = backend.open(tmp_path)
    yield opened
    opened.close()


# -- helpers -----------------------------------------------------------------------------------
def make_chunks(
    texts: Sequence[str],
    trails: Sequence[tuple[str, ...]] | None = None,
    *,
    symbol: str | None = None,
    salt: str = "",
) -> list[Chunk]:
    chunks, offset = [], 0
    for ordinal, text in enumerate(texts):
        trail = trails[ordinal] if trails else ()
        digest = hashlib.sha256(f"{salt}|{ordinal}|{text}".encode()).hexdigest()
        chunks.append(
            Chunk(
                id=digest[:32],
                ordinal=ordinal,
                text=text,
                embed_text=" > ".join(trail) + "\n" + text,
                trail=trail,
                start=offset,
                end=offset + len(text),
                content_kind=ContentKind.CODE if symbol else ContentKind.PROSE,
                tokens=len(text.split()),
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                line=ordinal + 1,
                page=None,
                language="python" if symbol else None,
                symbol=symbol,
            )
        )
        offset += len(text) + 2
    return chunks


def new_doc(path: str, text: str = "", *, title: str | None = None, size: int = 100) -> NewDocument:
    digest = hashlib.sha256(f"{path}|{text}".encode()).hexdigest()
    kind = path.rsplit(".", 1)[-1] if "." in path else "txt"
    return NewDocument(
        path=path, kind=kind, size=size, content_hash=digest, title=title, text=text, mtime=1.5
    )


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def put(
    store: Store,
    kb: KnowledgeBase,
    path: str,
    texts: Sequence[str],
    *,
    trails: Sequence[tuple[str, ...]] | None = None,
    title: str | None = None,
    vectors: np.ndarray | None = None,
    identity: EmbedderIdentity | None = None,
    symbol: str | None = None,
):
    chunks = make_chunks(texts, trails, symbol=symbol, salt=path)
    if vectors is not None and identity is None:
        identity = IDENTITY
    record = store.replace_document(
        kb.id,
        new_doc(path, "\n\n".join(texts), title=title),
        chunks,
        vectors,
        identity,
        SETTINGS_KEY,
    )
    return record, chunks


def ids_of(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


def stored_ids(document_id: str, chunks: Sequence[Chunk]) -> list[str]:
    """The ids a store gives these chunks of this document (the contract every backend keeps)."""
    return [stored_chunk_id(document_id, chunk.id) for chunk in chunks]


# -- knowledge bases ---------------------------------------------------------------------------
def test_create_get_list_and_delete_knowledge_bases(store: Store) -> None:
    settings_ = ChunkSettings(chunk_size=800, max_tokens=200, overlap=100)
    kb = store.create_kb(
        "team-docs",
        description="Team docs",
        scope=Scope.TEAM,
        owner="ana",
        chunk_settings=settings_,
    )
    assert (kb.name, kb.description, kb.scope, kb.owner) == (
        "team-docs",
        "Team docs",
        "team",
        "ana",
    )
    assert kb.chunk_settings == settings_ and kb.identity_key is None
    assert (kb.documents, kb.chunks, kb.bytes) == (0, 0, 0)
    other = store.create_kb("alpha")
    assert other.chunk_settings == ChunkSettings() and other.scope is Scope.PERSONAL
    assert store.get_kb("team-docs") == kb
    assert store.get_kb_by_id(kb.id) == kb
    assert [k.name for k in store.list_kbs()] == ["alpha", "team-docs"]
    store.delete_kb(kb.id)
    assert [k.name for k in store.list_kbs()] == ["alpha"]
    with pytest.raises(NotFound):
        store.get_kb("team-docs")


def test_bases_without_totals_are_the_same_bases_with_zeros(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra one", "zebra two"])
    full, bare = store.get_kb("docs"), store.get_kb("docs", totals=False)
    assert (full.documents, full.chunks) == (1, 2)
    assert replace(full, documents=0, indexed=0, failed=0, chunks=0, bytes=0, pending=0) == bare
    assert store.get_kb_by_id(kb.id, totals=False) == bare
    assert store.list_kbs(totals=False) == [bare]
    with pytest.raises(NotFound):
        store.get_kb("missing", totals=False)


def test_duplicate_name_conflicts_and_unknown_bases_are_not_found(store: Store) -> None:
    kb = store.create_kb("docs")
    with pytest.raises(Conflict):
        store.create_kb("docs")
    with pytest.raises(InvalidInput):
        store.create_kb("  ")
    with pytest.raises(InvalidInput):
        store.create_kb("other", scope="everyone")  # type: ignore[arg-type]
    for call in (
        lambda: store.get_kb("nope"),
        lambda: store.get_kb_by_id(kb.id + 100),
        lambda: store.delete_kb(kb.id + 100),
        lambda: store.set_kb_identity(kb.id + 100, IDENTITY),
        lambda: store.replace_document(kb.id + 100, new_doc("a.md"), [], None, None, "k"),
        lambda: store.record_failure(kb.id + 100, new_doc("a.md"), "corrupt"),
    ):
        with pytest.raises(NotFound):
            call()


def test_totals_and_identity(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["one zebra", "two", "three"])
    put(store, kb, "b.md", ["four"])
    store.record_failure(kb.id, new_doc("c.pdf", size=7), "no_text_layer")
    store.set_kb_identity(kb.id, IDENTITY)
    kb = store.get_kb("docs")
    assert (kb.documents, kb.indexed, kb.failed, kb.chunks, kb.bytes) == (3, 2, 1, 4, 207)
    assert kb.identity_key == IDENTITY.key
    assert store.list_kbs() == [kb]


# -- documents ---------------------------------------------------------------------------------
def test_replace_document_writes_the_document(store: Store) -> None:
    kb = store.create_kb("docs")
    text = "Résumé ✓ — the full extracted text\n\nwith two parts"
    chunks = make_chunks(["zebra one", "alpha two"], [("Intro",), ("Intro", "Part")])
    vectors = np.stack([unit(1), unit(2)])
    record = store.replace_document(
        kb.id, new_doc("docs/a.md", text, title="A"), chunks, vectors, IDENTITY, SETTINGS_KEY
    )
    assert record.state is DocumentState.INDEXED and record.reason is None
    assert (record.path, record.kind, record.size, record.title) == ("docs/a.md", "md", 100, "A")
    assert (record.chunk_count, record.identity_key, record.settings_key) == (
        2,
        IDENTITY.key,
        SETTINGS_KEY,
    )
    assert record.mtime == 1.5 and len(record.id) == 32
    assert store.get_document(kb.id, "docs/a.md") == record
    assert store.get_document(kb.id, "docs/b.md") is None
    assert store.get_document_by_id(kb.id, record.id) == record
    assert store.document_text(kb.id, record.id) == text
    assert store.list_documents(kb.id) == [record]
    assert store.list_documents(kb.id, DocumentState.FAILED) == []


def test_replacing_keeps_the_id_and_swaps_the_chunks(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    first, chunks = put(
        store, kb, "a.md", ["zebra stripes", "zebra herd"], vectors=np.stack([unit(1), unit(2)])
    )
    old_ids = stored_ids(first.id, chunks)
    assert len(store.get_chunks([kb.id], old_ids)) == 2
    second, _ = put(store, kb, "a.md", ["tulip fields"], title="Renamed", vectors=unit(3)[None])
    assert second.id == first.id and second.chunk_count == 1 and second.title == "Renamed"
    assert store.keyword_search([kb.id], "zebra", 10) == []
    assert store.keyword_search([kb.id], "stripes herd", 10) == []
    assert len(store.keyword_search([kb.id], "tulip", 10)) == 1
    assert store.get_chunks([kb.id], old_ids) == []
    dense = store.dense_search([kb.id], IDENTITY, unit(1), 10)
    assert ids_of(dense) == ids_of(store.keyword_search([kb.id], "tulip", 10))
    counts = backend.row_counts(store)
    assert counts["chunks"] == 1 and counts["vectors"] == 1 and counts["sections"] == 1
    backend.check_index(store)
    assert len(store.list_documents(kb.id)) == 1


def test_replace_document_rejects_bad_vectors_and_changes_nothing(store: Store) -> None:
    kb = store.create_kb("docs")
    before, _ = put(store, kb, "a.md", ["zebra"])
    chunks = make_chunks(["tulip", "alpha"])
    for vectors, identity in (
        (np.zeros((1, DIM), np.float32), IDENTITY),  # one row short
        (np.zeros((2, DIM + 1), np.float32), IDENTITY),  # wrong dimension
        (np.zeros((2, DIM), np.float32), None),  # no identity
        (np.full((2, DIM), np.nan, np.float32), IDENTITY),
    ):
        with pytest.raises(InvalidInput):
            store.replace_document(kb.id, new_doc("a.md", "x"), chunks, vectors, identity, "k")
    assert store.get_document(kb.id, "a.md") == before
    assert len(store.keyword_search([kb.id], "zebra", 5)) == 1


def test_replace_document_is_atomic(
    store: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = store.create_kb("docs")
    before, _ = put(
        store, kb, "a.md", ["zebra one", "zebra two"], vectors=np.stack([unit(1), unit(2)])
    )
    counts_before = backend.row_counts(store)
    kb_before = store.get_kb("docs")
    backend.after_chunks(monkeypatch, _fail)
    with pytest.raises(RuntimeError):
        put(store, kb, "a.md", ["tulip new"], title="New", vectors=unit(3)[None])
    with pytest.raises(RuntimeError):
        put(store, kb, "b.md", ["alpha new"], vectors=unit(4)[None])
    monkeypatch.undo()
    assert store.get_document(kb.id, "a.md") == before
    assert store.get_document(kb.id, "b.md") is None
    assert store.keyword_search([kb.id], "tulip alpha", 10) == []
    assert len(store.keyword_search([kb.id], "zebra", 10)) == 2
    assert len(store.dense_search([kb.id], IDENTITY, unit(1), 10)) == 2
    assert backend.row_counts(store) == counts_before
    assert store.get_kb("docs") == kb_before
    backend.check_index(store)
    put(store, kb, "b.md", ["alpha works"])  # the store is still usable
    assert len(store.keyword_search([kb.id], "alpha", 10)) == 1


def _fail() -> None:
    raise RuntimeError("injected failure after the chunks were written")


def test_record_failure_drops_the_chunks(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    indexed, _ = put(store, kb, "a.pdf", ["zebra text"], vectors=unit(1)[None])
    failed = store.record_failure(kb.id, new_doc("a.pdf", size=55), "corrupt")
    assert failed.id == indexed.id and failed.state is DocumentState.FAILED
    assert (failed.reason, failed.chunk_count, failed.size) == ("corrupt", 0, 55)
    assert failed.identity_key is None
    assert store.keyword_search([kb.id], "zebra", 5) == []
    assert store.dense_search([kb.id], IDENTITY, unit(1), 5) == []
    fresh = store.record_failure(kb.id, new_doc("b.docx"), "encrypted")
    assert fresh.state is DocumentState.FAILED and fresh.reason == "encrypted"
    assert [d.path for d in store.list_documents(kb.id, DocumentState.FAILED)] == [
        "a.pdf",
        "b.docx",
    ]
    counts = backend.row_counts(store)
    assert counts["chunks"] == counts["vectors"] == counts["sections"] == 0
    backend.check_index(store)
    again, _ = put(store, kb, "a.pdf", ["tulip"])  # a fixed file indexes again, same id
    assert again.id == indexed.id and again.reason is None


def test_delete_document_purges_everything(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    doc, _ = put(
        store,
        kb,
        "a.md",
        ["zebra", "alpha"],
        trails=[("H",), ("I",)],
        vectors=np.stack([unit(1), unit(2)]),
    )
    store.delete_document(kb.id, doc.id)
    assert all(count == 0 for count in backend.row_counts(store).values()), backend.row_counts(
        store
    )
    backend.check_index(store)
    with pytest.raises(NotFound):
        store.delete_document(kb.id, doc.id)
    with pytest.raises(NotFound):
        store.document_text(kb.id, doc.id)


def test_delete_kb_purges_everything_but_the_reuse_cache(store: Store, backend: Backend) -> None:
    kb = store.create_kb("docs")
    _, chunks = put(store, kb, "a.md", ["zebra", "alpha"], vectors=np.stack([unit(1), unit(2)]))
    put(store, kb, "b.md", ["tulip"], trails=[("T",)])
    store.record_failure(kb.id, new_doc("c.pdf"), "corrupt")
    store.dense_search([kb.id], IDENTITY, unit(1), 5)  # load an in-memory index first
    store.delete_kb(kb.id)
    assert all(count == 0 for count in backend.row_counts(store).values()), backend.row_counts(
        store
    )
    backend.check_index(store)
    assert store.dense_search([kb.id], IDENTITY, unit(1), 5) == []
    cached = store.cached_vectors(IDENTITY, [c.content_hash for c in chunks])
    np.testing.assert_array_equal(cached[chunks[0].content_hash], unit(1))


# -- scoping -----------------------------------------------------------------------------------
def test_ids_from_another_knowledge_base_find_nothing(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    doc_a, _ = put(store, a, "x.md", ["zebra in a"], vectors=unit(1)[None])
    put(store, b, "x.md", ["zebra in b"], vectors=unit(2)[None])
    chunk_a = ids_of(store.keyword_search([a.id], "zebra", 5))
    assert len(chunk_a) == 1
    with pytest.raises(NotFound):
        store.get_document_by_id(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.document_text(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.delete_document(b.id, doc_a.id)
    with pytest.raises(NotFound):
        store.neighbors([b.id], chunk_a[0], 1)
    assert store.get_chunks([b.id], chunk_a) == []
    assert ids_of(store.keyword_search([b.id], "zebra", 5)) != chunk_a
    assert ids_of(store.keyword_search([b.id], "zebra", 5, [doc_a.id])) == []
    assert chunk_a[0] not in ids_of(store.dense_search([b.id], IDENTITY, unit(1), 5))
    both = store.keyword_search([a.id, b.id], "zebra", 5)
    assert len(both) == 2
    assert {c.kb_name for c in store.get_chunks([a.id, b.id], ids_of(both))} == {"a", "b"}
    assert len(store.dense_search([a.id, b.id], IDENTITY, unit(1), 5)) == 2
    assert store.keyword_search([], "zebra", 5) == []


def test_identical_files_in_two_places_get_distinct_chunk_ids(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    chunks = make_chunks(["zebra copy", "alpha copy"], salt="same")  # the very same chunk ids
    for kb, path in ((a, "one.md"), (a, "two.md"), (b, "one.md")):
        store.replace_document(kb.id, new_doc(path, "same"), chunks, None, None, "k")
    hits = store.keyword_search([a.id, b.id], "zebra", 10)
    assert len(hits) == len(set(ids_of(hits))) == 3
    assert {c.path for c in store.get_chunks([a.id], ids_of(hits))} == {"one.md", "two.md"}


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
    assert top.trail == ("Policy", "Vacation") and len(hits) == 2
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
    assert {c.path for c in store.get_chunks([kb.id], ids_of(only_b))} == {"b.md"}
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
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
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


# -- dense search ------------------------------------------------------------------------------
def test_dense_search_finds_a_stored_vector_first(store: Store) -> None:
    kb = store.create_kb("docs")
    vectors = np.stack([unit(i) for i in range(20)])
    put(store, kb, "a.md", [f"chunk {i}" for i in range(20)], vectors=vectors)
    for i in (0, 7, 19):
        hits = store.dense_search([kb.id], IDENTITY, vectors[i], 3)
        assert store.get_chunks([kb.id], [hits[0][0]])[0].text == f"chunk {i}"
        assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    with pytest.raises(InvalidInput):
        store.dense_search([kb.id], IDENTITY, np.ones(DIM + 1, np.float32), 3)
    assert store.dense_search([kb.id], IDENTITY, vectors[0], 0) == []


def test_dense_search_keeps_identities_apart(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["under identity a"], vectors=unit(1)[None], identity=IDENTITY)
    put(store, kb, "b.md", ["under identity b"], vectors=unit(1)[None], identity=OTHER_IDENTITY)
    (hit,) = store.dense_search([kb.id], IDENTITY, unit(1), 10)
    assert store.get_chunks([kb.id], [hit[0]])[0].path == "a.md"
    (hit,) = store.dense_search([kb.id], OTHER_IDENTITY, unit(1), 10)
    assert store.get_chunks([kb.id], [hit[0]])[0].path == "b.md"
    unknown = EmbedderIdentity(model="never-used", digest="c" * 64, dim=DIM)
    assert store.dense_search([kb.id], unknown, unit(1), 10) == []


def test_dense_search_sees_writes_made_after_a_search(store: Store) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["first"], vectors=unit(1)[None])
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1
    put(store, kb, "b.md", ["second"], vectors=unit(2)[None])
    hits = store.dense_search([kb.id], IDENTITY, unit(2), 10)
    assert len(hits) == 2
    assert store.get_chunks([kb.id], [hits[0][0]])[0].text == "second"
    doc = store.get_document(kb.id, "b.md")
    assert doc is not None
    store.delete_document(kb.id, doc.id)
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "delete", "fail", "other-process"]),
        st.integers(0, 5),  # which document
        st.integers(1, 4),  # how many chunks
        st.integers(0, 10_000),  # vector seed
    ),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=OPERATIONS)
def test_dense_results_after_any_writes_equal_a_fresh_load(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory, operations: list
) -> None:
    """However the in-memory index catches up with writes (here or in another process),
    every search answers exactly what a store opened afresh answers."""
    folder = tmp_path_factory.mktemp("dense")
    store, other = backend.open(folder), backend.open(folder)
    try:
        kb = store.create_kb("docs")
        query = unit(99)
        for action, doc, count, seed in operations:
            path = f"d{doc}.md"
            writer = other if action == "other-process" else store
            if action in ("put", "other-process"):
                vectors = np.stack([unit(seed + i) for i in range(count)])
                put(writer, kb, path, [f"text {seed} {i}" for i in range(count)],
                    vectors=vectors)  # fmt: skip
            elif action == "fail":
                store.record_failure(kb.id, new_doc(path), "corrupt")
            elif (found := store.get_document(kb.id, path)) is not None:
                store.delete_document(kb.id, found.id)
            subset = [d.id for d in store.list_documents(kb.id)][:2]
            fresh = backend.open(folder)
            try:
                expected = fresh.dense_search([kb.id], IDENTITY, query, 100)
                expected_subset = fresh.dense_search([kb.id], IDENTITY, query, 100, subset)
            finally:
                fresh.close()
            assert sorted(store.dense_search([kb.id], IDENTITY, query, 100)) == sorted(expected)
            got_subset = store.dense_search([kb.id], IDENTITY, query, 100, subset)
            assert sorted(got_subset) == sorted(expected_subset)
    finally:
        store.close()
        other.close()


def test_dense_search_filters_documents_and_merges_bases(store: Store) -> None:
    a, b = store.create_kb("a"), store.create_kb("b")
    doc1, _ = put(store, a, "1.md", ["a1", "a2"], vectors=np.stack([unit(1), unit(2)]))
    doc2, _ = put(store, a, "2.md", ["a3"], vectors=unit(3)[None])
    put(store, b, "3.md", ["b1"], vectors=unit(4)[None])
    hits = store.dense_search([a.id], IDENTITY, unit(1), 10, [doc2.id])
    assert [c.text for c in store.get_chunks([a.id], ids_of(hits))] == ["a3"]
    assert store.dense_search([a.id], IDENTITY, unit(1), 10, []) == []
    assert store.dense_search([a.id], IDENTITY, unit(1), 10, ["unknown"]) == []
    assert len(store.dense_search([a.id], IDENTITY, unit(1), 10, [doc1.id, doc2.id])) == 3
    merged = store.dense_search([a.id, b.id], IDENTITY, unit(4), 2)
    assert store.get_chunks([a.id, b.id], [merged[0][0]])[0].text == "b1"
    assert len(merged) == 2 and merged[0][1] >= merged[1][1]


# -- embedding reuse ---------------------------------------------------------------------------
def test_cached_vectors_round_trip_and_outlive_documents(store: Store) -> None:
    kb = store.create_kb("docs")
    texts = [f"text {i}" for i in range(600)]  # more hashes than one IN list holds
    vectors = np.stack([unit(i) for i in range(600)])
    doc, chunks = put(store, kb, "a.md", texts, vectors=vectors)
    hashes = [c.content_hash for c in chunks]
    cached = store.cached_vectors(IDENTITY, [*hashes, "missing", hashes[0]])
    assert set(cached) == set(hashes)
    np.testing.assert_array_equal(cached[hashes[599]], vectors[599])
    assert cached[hashes[0]].dtype == np.float32
    assert store.cached_vectors(OTHER_IDENTITY, hashes) == {}
    assert store.cached_vectors(IDENTITY, []) == {}
    store.delete_document(kb.id, doc.id)
    assert len(store.cached_vectors(IDENTITY, hashes)) == 600


# -- hydration ---------------------------------------------------------------------------------
def test_get_chunks_hydrates_in_the_order_asked(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(
        store,
        kb,
        "src/a.py",
        ["zebra one", "zebra two"],
        title="A",
        symbol="f",
        trails=[("mod",), ("mod", "f")],
    )
    ids = stored_ids(doc.id, chunks)
    got = store.get_chunks([kb.id], [ids[1], "unknown", ids[0]])
    assert [c.id for c in got] == [ids[1], ids[0]]
    first = got[1]
    assert (first.kb_id, first.kb_name, first.document_id) == (kb.id, "docs", doc.id)
    assert (first.path, first.title, first.kind, first.ordinal) == ("src/a.py", "A", "py", 0)
    assert (first.text, first.trail, first.start, first.end) == ("zebra one", ("mod",), 0, 9)
    assert (first.content_kind, first.line, first.page, first.page_end) == ("code", 1, None, None)
    assert (first.language, first.symbol, first.tokens) == ("python", "f", 2)
    assert got[0].trail == ("mod", "f")
    assert store.get_chunks([kb.id], []) == []


def test_neighbors_are_the_window_around_a_chunk(store: Store) -> None:
    kb = store.create_kb("docs")
    doc, chunks = put(store, kb, "a.md", [f"zebra {i}" for i in range(6)])
    put(store, kb, "b.md", ["zebra elsewhere"])
    ids = stored_ids(doc.id, chunks)
    assert [c.ordinal for c in store.neighbors([kb.id], ids[3], 1)] == [2, 3, 4]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[0], 2)] == [0, 1, 2]
    assert [c.ordinal for c in store.neighbors([kb.id], ids[5], 0)] == [5]
    assert {c.path for c in store.neighbors([kb.id], ids[5], 100)} == {"a.md"}
    with pytest.raises(NotFound):
        store.neighbors([kb.id], "unknown", 1)


# -- concurrency -------------------------------------------------------------------------------
def test_threads_can_share_a_store(store: Store) -> None:
    kb = store.create_kb("docs")
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(15):
                put(store, kb, f"w{i}.md", [f"zebra {i}"], vectors=unit(i)[None])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for i in range(30):
                store.keyword_search([kb.id], "zebra", 5)
                store.dense_search([kb.id], IDENTITY, unit(i), 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.keyword_search([kb.id], "zebra", 100)) == 15


def test_searches_neither_wait_for_nor_see_a_write_in_progress(
    store: Store, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra old"], vectors=unit(1)[None])
    reached, release = threading.Event(), threading.Event()

    def hold() -> None:
        reached.set()
        assert release.wait(timeout=30)

    backend.after_chunks(monkeypatch, hold)
    writer = threading.Thread(
        target=put, args=(store, kb, "a.md", ["zebra new"]), kwargs={"vectors": unit(2)[None]}
    )
    writer.start()
    try:
        assert reached.wait(timeout=30)  # the replacement is half-written, uncommitted
        seen: list[list[str]] = []

        def search() -> None:
            hits = store.keyword_search([kb.id], "zebra", 10)
            seen.append([c.text for c in store.get_chunks([kb.id], ids_of(hits))])
            seen.append([str(store.get_kb("docs").chunks)])

        reader = threading.Thread(target=search)
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive(), "a search waited for the write to finish"
        assert seen == [["zebra old"], ["1"]]
    finally:
        release.set()
        writer.join(timeout=30)
    hits = store.keyword_search([kb.id], "zebra", 10)
    assert [c.text for c in store.get_chunks([kb.id], ids_of(hits))] == ["zebra new"]


def test_uploads_are_listed_apart_from_folder_files(store: Store) -> None:
    first, second = store.create_kb("first"), store.create_kb("second")
    put(store, first, "uploads/not-an-upload.md", ["from a folder named uploads"])
    sealed = NewDocument(path="uploads/abc.md", kind="md", size=3, content_hash="c" * 64,
                         display_name="sealed-name")  # fmt: skip
    one = store.create_upload(first.id, sealed)
    two = store.create_upload(second.id, sealed)
    assert one.uploaded and two.uploaded and one.state is DocumentState.PENDING
    assert not store.get_document(first.id, "uploads/not-an-upload.md").uploaded
    assert store.list_uploads() == [(first.id, one.id), (second.id, two.id)]
    assert store.find_by_hash(second.id, "c" * 64) == two
    with pytest.raises(Conflict):
        store.create_upload(first.id, sealed)
    store.record_failure(first.id, sealed, "corrupt")
    assert store.list_uploads(DocumentState.PENDING) == [(second.id, two.id)]
    hits = store.keyword_search([first.id], "folder", 10)
    assert [c.uploaded for c in store.get_chunks([first.id], ids_of(hits))] == [False]


def test_a_closed_store_says_so_for_reads_and_writes(backend: Backend, tmp_path: Path) -> None:
    store = backend.open(tmp_path)
    kb = store.create_kb("docs")
    store.keyword_search([kb.id], "anything", 5)  # a pooled read connection exists now
    store.close()
    store.close()  # twice is fine
    for call in (lambda: store.get_kb("docs"), lambda: store.create_kb("other"),
                 lambda: store.keyword_search([kb.id], "anything", 5)):  # fmt: skip
        with pytest.raises(InvalidInput, match="closed; open it again"):
            call()


def test_a_second_store_on_the_same_database_sees_writes(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    """Two processes (here: two store objects) share one database; in-memory vector indexes
    notice the other's writes through the generation check."""
    kb = store.create_kb("docs")
    put(store, kb, "a.md", ["zebra first"], vectors=unit(1)[None])
    assert len(store.dense_search([kb.id], IDENTITY, unit(2), 10)) == 1
    other = backend.open(tmp_path)
    try:
        put(other, other.get_kb("docs"), "b.md", ["zebra second"], vectors=unit(2)[None])
        hits = store.dense_search([kb.id], IDENTITY, unit(2), 10)
        assert store.get_chunks([kb.id], [hits[0][0]])[0].text == "zebra second"
        assert len(store.keyword_search([kb.id], "zebra", 10)) == 2
        other.delete_kb(kb.id)
    finally:
        other.close()
    assert store.dense_search([kb.id], IDENTITY, unit(2), 10) == []
    assert store.list_kbs() == []
