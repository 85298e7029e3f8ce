"""The ANN index behind the vector seam: candidates rescored exactly, rows the graph lacks
searched exactly, selective filters answered exactly, the side file reused across loads."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lorebase.embed.fake import FakeEmbedder
from lorebase.store import ann
from lorebase.store.ann import AnnIndex, GraphSlot, SideFile, build_ann_index, chunk_keys
from lorebase.store.sqlite.dense import DenseIndexes
from lorebase.store.sqlite.store import SqliteStore, connect
from lorebase.store.vectors import ExactIndex, Int8ExactIndex, Int8Rows
from unit.plain_documents import plain_document

# usearch is a dependency of lorebase; imported after onnxruntime (see import_usearch).
assert ann.import_usearch() is not None

DIM = 32
ROWS = 1500


def clustered(n: int = ROWS, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """Unit vectors around a few dozen centres, like embeddings of related passages."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))
    rows = centres[rng.integers(0, 40, n)] + 0.4 * rng.standard_normal((n, dim))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def keys(n: int) -> np.ndarray:
    """Keys of n chunks with sha256-like ids and content hashes, as the store makes them."""
    ids = [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(n)]
    texts = [hashlib.sha256(f"text {i}".encode()).hexdigest() for i in range(n)]
    return chunk_keys(ids, texts)


def slot(tmp_path: Path | None = None) -> GraphSlot:
    side = SideFile.at(tmp_path, 1, 1) if tmp_path is not None else None
    return GraphSlot(DIM, side, background=False)


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    ids: list[int] = ExactIndex(matrix).search(query, k)[0].tolist()
    return ids


def test_keys_fold_the_chunk_id_and_its_text_hash_into_63_bits() -> None:
    found = chunk_keys(
        ["ffffffffffffffff" + "0" * 16, "0000000000000001" + "f" * 16],
        ["0" * 64, "0000000000000002" + "0" * 48],
    )
    assert found.dtype == np.uint64
    assert found.tolist() == [(1 << 63) - 1, 3]
    assert chunk_keys([], []).size == 0
    # Other strings are hashed; the same id with other text is another key.
    assert len(set(chunk_keys(["a", "a"], ["x", "y"]).tolist())) == 2


def test_results_match_exact_search_with_exact_scores() -> None:
    matrix = clustered()
    index = build_ann_index(matrix, keys(ROWS), slot(), generation=1)
    assert isinstance(index, AnnIndex)
    queries = clustered(30, seed=7)
    recall = []
    for query in queries:
        positions, scores = index.search(query, 10)
        np.testing.assert_allclose(scores, matrix[positions] @ query, rtol=1e-5)
        assert list(scores) == sorted(scores, reverse=True)
        recall.append(len(set(positions.tolist()) & set(exact_top(matrix, query, 10))) / 10)
    assert np.mean(recall) >= 0.95


def test_int8_rows_as_the_store_loads_them_rank_like_their_decoded_matrix() -> None:
    """An ANN-sized base keeps its rows in the stored int8 form: the graph is built from them
    (decoded a batch at a time) and candidates are rescored against them, with the scores an
    exact search over the decoded rows gives."""
    rows = Int8Rows.of(clustered())
    decoded = rows.decode()
    index = build_ann_index(rows, keys(ROWS), slot(), generation=1)
    assert isinstance(index, AnnIndex)
    recall = []
    for query in clustered(30, seed=7):
        positions, scores = index.search(query, 10)
        np.testing.assert_allclose(scores, decoded[positions] @ query, rtol=1e-5, atol=1e-6)
        recall.append(len(set(positions.tolist()) & set(exact_top(decoded, query, 10))) / 10)
        allowed = np.zeros(ROWS, dtype=bool)
        allowed[::40] = True  # a selective filter: answered exactly over int8 rows
        filtered, _ = index.search(query, 5, allowed)
        assert filtered.tolist() == ExactIndex(decoded).search(query, 5, allowed)[0].tolist()
    assert np.mean(recall) >= 0.95


def test_int8_exact_index_answers_like_the_decoded_matrix() -> None:
    rows = Int8Rows.of(clustered())
    decoded = rows.decode()
    index = Int8ExactIndex(rows)
    assert (index.size, index.dim) == (ROWS, DIM)
    for query in clustered(10, seed=3):
        positions, scores = index.search(query, 10)
        expected, expected_scores = ExactIndex(decoded).search(query, 10)
        assert positions.tolist() == expected.tolist()
        np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-6)


def test_rows_the_graph_lacks_are_searched_exactly() -> None:
    matrix = clustered()
    graph = slot()
    graph.sync(matrix[:1000], keys(1000), generation=1)
    index = AnnIndex(matrix, keys(ROWS), graph)
    assert index.pending().tolist() == list(range(1000, ROWS))
    for row in (1000, 1234, ROWS - 1):
        positions, scores = index.search(matrix[row], 3)
        assert positions[0] == row
        assert scores[0] == pytest.approx(1.0, abs=1e-5)


def test_keys_the_matrix_no_longer_has_are_ignored() -> None:
    matrix = clustered()
    graph = slot()
    graph.sync(matrix, keys(ROWS), generation=1)
    index = AnnIndex(matrix[:500], keys(500), graph)  # an older, smaller load
    positions, _ = index.search(matrix[900], 20)
    assert positions.size and positions.max() < 500


@pytest.mark.parametrize("share", [0.01, 0.5])  # selective (exact) and broad (graph) filters
def test_filters_return_only_allowed_rows(share: float) -> None:
    matrix = clustered()
    index = build_ann_index(matrix, keys(ROWS), slot(), generation=1)
    allowed = np.random.default_rng(3).random(ROWS) < share
    for query in clustered(10, seed=11):
        positions, _ = index.search(query, 10, allowed)
        assert allowed[positions].all()
        expected = ExactIndex(matrix).search(query, 10, allowed)[0].tolist()
        if share < ann.EXACT_FILTER_SHARE:
            assert positions.tolist() == expected
        else:
            assert len(set(positions.tolist()) & set(expected)) >= 8


def test_a_filter_allowing_no_row_finds_nothing() -> None:
    """A base none of whose documents a filter allows (or whose allowed documents have no
    vectors yet) answers with no hit, not an error."""
    index = build_ann_index(clustered(), keys(ROWS), slot(), generation=1)
    positions, scores = index.search(clustered(1, seed=5)[0], 10, np.zeros(ROWS, dtype=bool))
    assert positions.size == 0 and scores.size == 0


def test_the_side_file_is_reused_and_brought_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = clustered()
    first = slot(tmp_path)
    first.sync(matrix[:1200], keys(1200), generation=4)
    side = SideFile.at(tmp_path, 1, 1)
    assert side.graph.is_file()
    assert json.loads(side.meta.read_text())["generation"] == 4

    def no_build(*args: object) -> None:
        raise AssertionError("the saved graph should have been edited, not rebuilt")

    monkeypatch.setattr(ann, "new_graph", no_build)
    second = slot(tmp_path)  # a new process: rows 0-99 deleted, 1200-1499 added since
    wanted = keys(ROWS)[100:]
    second.sync(matrix[100:], wanted, generation=9)
    assert second.keys.tolist() == np.sort(wanted).tolist()
    index = AnnIndex(matrix[100:], wanted, second)
    assert index.pending().size == 0
    assert index.search(matrix[1300], 1)[0].tolist() == [1200]


def test_a_side_file_of_another_format_is_rebuilt(tmp_path: Path) -> None:
    matrix = clustered()
    slot(tmp_path).sync(matrix, keys(ROWS), generation=1)
    side = SideFile.at(tmp_path, 1, 1)
    meta = json.loads(side.meta.read_text())
    side.meta.write_text(json.dumps({**meta, "version": -1}))
    fresh = slot(tmp_path)
    fresh.sync(matrix, keys(ROWS), generation=2)
    assert json.loads(side.meta.read_text())["version"] == ann.SIDE_FILE_VERSION
    assert fresh.keys.size == ROWS


def test_background_build_answers_exactly_until_ready() -> None:
    matrix = clustered()
    graph = GraphSlot(DIM, None, background=True)
    index = build_ann_index(matrix, keys(ROWS), graph, generation=1)
    positions, _ = index.search(matrix[5], 1)  # exact or graph, either way right
    assert positions.tolist() == [5]
    assert graph.wait(timeout=60)
    assert graph.error is None and graph.keys.size == ROWS
    assert isinstance(index, AnnIndex) and index.pending().size == 0


def test_without_usearch_every_index_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usearch", None)  # import fails as if not installed
    index = build_ann_index(clustered(), keys(ROWS), slot(), generation=1)
    assert isinstance(index, ExactIndex)


def test_the_store_switches_to_the_graph_past_the_threshold(tmp_path: Path) -> None:
    """Through a real SQLite store: the threshold is a parameter, results match exact search
    before and after a write, and the side file lands in the given folder."""
    embedder = FakeEmbedder(DIM)
    words = [
        "river",
        "bank",
        "money",
        "loan",
        "water",
        "boat",
        "stream",
        "credit",
        "flood",
        "account",
    ]
    rng = np.random.default_rng(5)
    with SqliteStore(tmp_path / "lorebase.db") as store:
        kb = store.create_kb("kb")
        store.set_kb_identity(kb.id, embedder.identity)
        for number in range(8):
            texts = [" ".join(rng.choice(words, 6)) + f" n{number}x{i}" for i in range(25)]
            document, chunks = plain_document(number, texts)
            vectors = embedder.embed_documents([c.embed_text for c in chunks])
            store.replace_document(kb.id, document, chunks, vectors, embedder.identity, "s")
        dense = DenseIndexes(ann_threshold=100, ann_folder=tmp_path / "ann", ann_background=False)
        conn = connect(store.path)
        identity_id = conn.execute("SELECT id FROM identities").fetchone()[0]

        def check(query_text: str) -> None:
            vector = embedder.embed_query(query_text)
            (loaded,) = dense.indexes_for(conn, [kb.id], identity_id, DIM)
            assert isinstance(loaded.index, AnnIndex)
            got = loaded.search(vector, 5, None)
            want = store.dense_search([kb.id], embedder.identity, vector, 5)
            assert [c for c, _ in got][:3] == [c for c, _ in want][:3]

        check("river bank flood")
        assert (tmp_path / "ann" / f"kb{kb.id}-identity{identity_id}.usearch").is_file()
        texts = [f"brand new passage about lighthouses number {i}" for i in range(20)]
        document, chunks = plain_document(3, texts)  # replaces doc-3.txt
        vectors = embedder.embed_documents([c.embed_text for c in chunks])
        store.replace_document(kb.id, document, chunks, vectors, embedder.identity, "s")
        check("lighthouses passage number 7")
        slot_ = dense.graph(kb.id, identity_id)
        assert slot_ is not None and slot_.keys.size == 7 * 25 + 20
        conn.close()


def test_a_build_stops_between_batches_and_the_old_graph_stays() -> None:
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((3 * ann.ADD_BATCH_ROWS, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = np.arange(1, len(rows) + 1, dtype=np.uint64)
    slot = GraphSlot(16, None, background=False)
    slot.sync(rows[: ann.ADD_BATCH_ROWS], keys[: ann.ADD_BATCH_ROWS], 1)
    built = slot.graph
    assert built is not None and len(built) == ann.ADD_BATCH_ROWS
    calls = 0

    def stop_after_one_batch() -> bool:
        nonlocal calls
        calls += 1
        return calls > 1

    graph = ann.new_graph(ann.import_usearch(), 16)
    with pytest.raises(ann.Stopped):
        ann.add_rows(graph, keys, rows, stopping=stop_after_one_batch)
    assert len(graph) == ann.ADD_BATCH_ROWS  # one batch went in, then it stopped
    assert slot.stop(timeout=30)
    slot.sync(rows, keys, 2)  # a stopped slot takes no more work
    assert slot.graph is built and built is not None and len(built) == ann.ADD_BATCH_ROWS


@pytest.mark.parametrize("closes", [True, False])
def test_a_process_that_exits_during_a_build_exits_cleanly(closes: bool) -> None:
    """usearch's threads at work in a daemon thread when the process exits abort it
    ("terminate called without an active exception", exit code 134): closing stops the build
    first, and a process that does not close is stopped at exit."""
    script = """
import time, numpy as np
from lorebase.store.ann import GraphSlot
rows = np.random.default_rng(1).standard_normal((400_000, 32)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)
slot = GraphSlot(32, None, background=True)
slot.sync(rows, np.arange(1, len(rows) + 1, dtype=np.uint64), 1)
time.sleep(0.5)  # the wait is the test: the exit comes while the build (seconds long) runs
if CLOSES:
    assert slot.stop(timeout=60)
print("stopped", flush=True)
""".replace("CLOSES", str(closes))
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopped" in done.stdout


def test_a_graph_sized_base_gives_the_keyword_candidates_cosines_from_its_stored_vectors(
    tmp_path: Path,
) -> None:
    """An ANN index keeps no rows by id: the cosines of chunks its search did not return are
    read from the stored vectors, and equal those an exact search gives."""
    embedder = FakeEmbedder(DIM)
    with SqliteStore(tmp_path / "lorebase.db") as store:
        store._dense = DenseIndexes(  # a graph from 100 rows, built at once
            ann_threshold=100, ann_folder=tmp_path / "ann", ann_background=False
        )
        kb = store.create_kb("kb")
        store.set_kb_identity(kb.id, embedder.identity)
        for number in range(5):
            texts = [f"passage {i} of document {number} about herons" for i in range(30)]
            document, chunks = plain_document(number, texts)
            vectors = embedder.embed_documents([c.embed_text for c in chunks])
            store.replace_document(kb.id, document, chunks, vectors, embedder.identity, "s")
        vector = embedder.embed_query("herons of document 3")
        conn = connect(store.path)
        identity_id = conn.execute("SELECT id FROM identities").fetchone()[0]
        (loaded,) = store._dense.indexes_for(conn, [kb.id], identity_id, DIM)
        conn.close()
        assert isinstance(loaded.index, AnnIndex) and loaded.scores_of(vector, ["x"]) is None
        wanted = dict(store.dense_search([kb.id], embedder.identity, vector, 150))
        scores = store.dense_scores([kb.id], embedder.identity, vector, list(wanted))
        assert scores.keys() == wanted.keys()
        for chunk_id, score in wanted.items():
            assert scores[chunk_id] == pytest.approx(score, abs=1e-4)
