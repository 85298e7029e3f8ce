"""Synthetic knowledge bases for the search benchmark: real sentences, fake-embedder vectors.

A *sentence pool* is cut from real text: the extracted text of ``../shared/data/docs`` (War
and Peace, Norwich City, the PDFs, DOCX and HTML files) plus the Cranfield and CISI abstracts
(so the Cranfield/CISI queries find their topics). A synthetic chunk is two runs of
consecutive sentences from random places in the pool, 100-300 words in all; a document is
10-50 such chunks under a title and sections of a few chunks with headings. Term statistics
are therefore those of real English prose; no chunk repeats another.

Vectors are the :class:`~lorebase.embed.fake.FakeEmbedder` vectors of the chunk text at 384
dimensions, computed without embedding a million texts one by one: the fake is a sum of
hashed word and trigram features, so the raw (unnormalised) vector of a run of sentences is
a difference of prefix sums over the pool's sentence vectors. :func:`check_vectors` proves
the shortcut equals ``FakeEmbedder.embed_documents`` on sample chunks.

These are **not** MiniLM vectors: fake vectors behave like high-dimensional random
projections (harder for an ANN graph than real embeddings, no effect on exact search cost).
:func:`minilm_vectors` gives the same chunks the bundled embedder's vectors instead (one
embedding pass, ~15-30 chunks/s on 2 cores, cached to a ``.npy`` so a re-run does not embed
again), for :func:`build` to write in place of the fake ones; :func:`chunk_corpus` gives the
chunks as plain texts and vectors for the peers in ``bench/peers.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lorebase.embed.base import Embedder, EmbedderIdentity
from lorebase.embed.fake import FakeEmbedder, features
from lorebase.errors import ExtractionFailed
from lorebase.extract import extract_file
from lorebase.formats import document_kind
from lorebase.ingest.sources import iter_files
from lorebase.settings import ExtractSettings
from lorebase.store.base import NewDocument
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.store import SqliteStore
from lorebase.store.vectors import to_blobs
from lorebase.types import Chunk, ContentKind, Position

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
DIM = 384
MIN_SENTENCE_WORDS = 4
MAX_SENTENCE_WORDS = 80
CHUNK_WORDS = (100, 300)
DOCUMENT_CHUNKS = (10, 50)
SECTION_CHUNKS = (2, 8)
TITLE_WORDS = 6
HEADING_WORDS = 5
BUILT_MARKER = "built.json"
PROGRESS_EVERY = 50_000
BULK_TRANSACTION_CHUNKS = 20_000
EMBED_BLOCK = 1_000  # MiniLM vectors are saved every this many chunks (an interrupted run resumes)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


@dataclass(frozen=True, slots=True)
class Pool:
    """Sentences, their word counts and the prefix sums of their raw fake vectors."""

    sentences: list[str]
    words: np.ndarray
    prefix: np.ndarray  # (len(sentences) + 1, DIM) float64; row i = sum of raw vectors < i


def real_texts() -> Iterator[str]:
    """Extracted text of the shared documents, then the Cranfield and CISI records."""
    docs = SHARED / "docs"
    settings = ExtractSettings()
    for path in sorted(iter_files(docs.resolve())):
        if document_kind(path) is None:
            continue
        try:
            yield extract_file(path, settings).text
        except ExtractionFailed:
            continue
    for name in ("cranfield", "cisi"):
        corpus = SHARED / "ir" / name / "corpus.jsonl"
        for line in corpus.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                yield f"{record.get('title', '')}. {record.get('text', '')}"


def sentence_pool(embedder: FakeEmbedder) -> Pool:
    sentences: list[str] = []
    for text in real_texts():
        for piece in SENTENCE_END.split(text):
            sentence = " ".join(piece.split())
            count = len(sentence.split())
            if MIN_SENTENCE_WORDS <= count <= MAX_SENTENCE_WORDS:
                sentences.append(sentence)
    raw = np.zeros((len(sentences), DIM), dtype=np.float64)
    for row, sentence in enumerate(sentences):
        for feature, weight in features(sentence):
            bucket, sign = embedder._bucket(feature)  # the fake's own hashing (bench only)
            raw[row, bucket] += sign * weight
    prefix = np.zeros((len(sentences) + 1, DIM), dtype=np.float64)
    np.cumsum(raw, axis=0, out=prefix[1:])
    words = np.asarray([len(s.split()) for s in sentences], dtype=np.int64)
    return Pool(sentences, words, prefix)


@dataclass(frozen=True, slots=True)
class SyntheticDocument:
    document: NewDocument
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), DIM) float32, unit rows


def _run(pool: Pool, rng: np.random.Generator, words: int) -> tuple[int, int]:
    """A run of consecutive sentences ``[start, end)`` with about ``words`` words."""
    n = len(pool.sentences)
    start = int(rng.integers(0, n))
    end, total = start, 0
    while total < words and end < n:
        total += int(pool.words[end])
        end += 1
    return start, end


def make_document(pool: Pool, number: int, rng: np.random.Generator) -> SyntheticDocument:
    """One synthetic document: 10-50 chunks, each two sentence runs, in sections."""
    count = int(rng.integers(DOCUMENT_CHUNKS[0], DOCUMENT_CHUNKS[1] + 1))
    texts: list[str] = []
    raws = np.zeros((count, DIM), dtype=np.float64)
    for row in range(count):
        target = int(rng.integers(CHUNK_WORDS[0], CHUNK_WORDS[1] + 1))
        first = int(target * rng.uniform(0.3, 0.7))
        parts = []
        for want in (first, target - first):
            start, end = _run(pool, rng, want)
            parts.extend(pool.sentences[start:end])
            raws[row] += pool.prefix[end] - pool.prefix[start]
        texts.append(" ".join(parts))
    title = " ".join(texts[0].split()[:TITLE_WORDS])
    chunks: list[Chunk] = []
    offset = 0
    trail: tuple[str, ...] = ()
    section_left = 0
    for ordinal, text in enumerate(texts):
        if section_left == 0:
            trail = (" ".join(text.split()[:HEADING_WORDS]),)
            section_left = int(rng.integers(SECTION_CHUNKS[0], SECTION_CHUNKS[1] + 1))
        section_left -= 1
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        chunks.append(
            Chunk(
                id=f"{number:08d}-{ordinal:04d}",
                ordinal=ordinal,
                text=text,
                embed_text=f"{title} > {trail[0]}\n{text}",
                tokens=len(text.split()) * 4 // 3,
                content_hash=digest,
                position=Position(
                    trail=trail,
                    start=offset,
                    end=offset + len(text),
                    content_kind=ContentKind.PROSE,
                    line=1 + ordinal,
                ),
            )
        )
        offset += len(text) + 2
    body = "\n\n".join(texts)
    document = NewDocument(
        path=f"synthetic/doc-{number:08d}.txt",
        kind="txt",
        size=len(body.encode("utf-8")),
        content_hash=hashlib.sha256(body.encode("utf-8")).hexdigest(),
        title=title,
        text=body,
    )
    norms = np.linalg.norm(raws, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return SyntheticDocument(document, chunks, (raws / norms).astype(np.float32))


def documents(pool: Pool, target_chunks: int, seed: int) -> Iterator[SyntheticDocument]:
    """Documents until ``target_chunks`` chunks (the last one is cut to fit)."""
    rng = np.random.default_rng(seed)
    made = number = 0
    while made < target_chunks:
        doc = make_document(pool, number, rng)
        keep = min(len(doc.chunks), target_chunks - made)
        if keep < len(doc.chunks):
            doc = SyntheticDocument(doc.document, doc.chunks[:keep], doc.vectors[:keep])
        yield doc
        made += keep
        number += 1


def check_vectors(pool: Pool, embedder: FakeEmbedder, samples: int = 5) -> float:
    """The lowest cosine between the prefix-sum vectors and ``embed_documents`` of the same
    chunk texts (1.0 up to rounding when the shortcut is exact)."""
    doc = make_document(pool, 0, np.random.default_rng(12345))
    chunks = doc.chunks[:samples]
    direct = embedder.embed_documents([c.text for c in chunks])
    return float(np.min(np.sum(direct * doc.vectors[: len(chunks)], axis=1)))


# -- the same chunks as plain texts, and MiniLM vectors for them -------------------------
@dataclass(frozen=True, slots=True)
class ChunkCorpus:
    """The chunks :func:`build` writes for ``(size, seed)``, in the same order."""

    ids: list[str]
    texts: list[str]  # embed_text: "title > heading", newline, the chunk text
    fake_vectors: np.ndarray  # (len(ids), DIM) float32, unit rows


def chunk_corpus(size: int, seed: int) -> ChunkCorpus:
    pool = sentence_pool(FakeEmbedder(DIM))
    ids: list[str] = []
    texts: list[str] = []
    vectors: list[np.ndarray] = []
    for doc in documents(pool, size, seed + size):
        ids.extend(c.id for c in doc.chunks)
        texts.extend(c.embed_text for c in doc.chunks)
        vectors.append(doc.vectors)
    return ChunkCorpus(ids, texts, np.concatenate(vectors))


def vectors_cache_file(folder: Path, size: int, seed: int, identity: EmbedderIdentity) -> Path:
    """One file per chunk set and model: the identity key names the model and its variant."""
    tag = hashlib.sha256(identity.key.encode("utf-8")).hexdigest()[:12]
    return folder / f"minilm-{size}-{seed}-{tag}.npy"


def minilm_vectors(
    texts: list[str], cache: Path, embedder: Embedder, log: Any = sys.stderr
) -> tuple[np.ndarray, float | None]:
    """``embed_documents`` of every text, from ``cache`` when it is there. Blocks of
    ``EMBED_BLOCK`` chunks are saved as they finish (``<cache>.part-N.npy``), so an
    interrupted pass resumes where it stopped. Returns the vectors and the seconds spent
    embedding in this call (None when everything came from the cache)."""
    if cache.is_file():
        vectors = np.load(cache)
        if len(vectors) != len(texts):
            sys.exit(f"{cache} holds {len(vectors)} vectors for {len(texts)} chunks")
        return vectors, None
    cache.parent.mkdir(parents=True, exist_ok=True)
    parts: list[np.ndarray] = []
    spent = 0.0
    embedded = 0  # in this call (resumed blocks are read, not embedded)
    for number, start in enumerate(range(0, len(texts), EMBED_BLOCK)):
        part = cache.with_suffix(f".part-{number:05d}.npy")
        if part.is_file():
            parts.append(np.load(part))
            continue
        started = time.perf_counter()
        block = embedder.embed_documents(texts[start : start + EMBED_BLOCK])
        spent += time.perf_counter() - started
        tmp = part.with_suffix(".tmp.npy")
        np.save(tmp, block)
        os.replace(tmp, part)
        parts.append(block)
        embedded += len(block)
        done = start + len(block)
        print(f"  embedded {done}/{len(texts)} chunks, {embedded / spent:.1f}/s", file=log)
    vectors = np.concatenate(parts).astype(np.float32)
    np.save(cache, vectors)
    for number in range(len(parts)):
        cache.with_suffix(f".part-{number:05d}.npy").unlink(missing_ok=True)
    return vectors, spent


# -- building stores ---------------------------------------------------------------------
def build(
    db: Path,
    size: int,
    kb_name: str,
    seed: int,
    vectors: np.ndarray | None = None,
    identity: EmbedderIdentity | None = None,
) -> dict[str, Any]:
    """Write ``size`` synthetic chunks through ``replace_document`` (the product write path),
    with their fake vectors, or with ``vectors`` (one row per chunk, in :func:`chunk_corpus`
    order) under ``identity``."""
    fake = FakeEmbedder(DIM)
    if (vectors is None) != (identity is None):
        raise ValueError("vectors and identity go together")
    started = time.perf_counter()
    pool = sentence_pool(fake)
    pool_seconds = time.perf_counter() - started
    agreement = check_vectors(pool, fake)
    if agreement < 0.9999:
        sys.exit(f"synthetic vectors disagree with the fake embedder (cosine {agreement:.5f})")
    db.parent.mkdir(parents=True, exist_ok=True)
    for stale in db.parent.glob("lorebase.db*"):
        stale.unlink()
    store = SqliteStore(db)
    kb = store.create_kb(kb_name)
    write_identity = identity or fake.identity
    store.set_kb_identity(kb.id, write_identity)
    settings_key = kb.chunk_settings.key
    started = time.perf_counter()
    written = made = 0
    for doc in documents(pool, size, seed + size):
        rows = doc.vectors if vectors is None else vectors[written : written + len(doc.chunks)]
        store.replace_document(kb.id, doc.document, doc.chunks, rows, write_identity, settings_key)
        made += 1
        before, written = written, written + len(doc.chunks)
        if written // PROGRESS_EVERY != before // PROGRESS_EVERY:
            rate = written / (time.perf_counter() - started)
            print(f"  {db.parent.name}: {written} chunks, {rate:.0f}/s", file=sys.stderr)
    write_seconds = time.perf_counter() - started
    store.close()
    if vectors is not None and written != len(vectors):
        sys.exit(f"{len(vectors)} vectors for {written} chunks")
    info = {
        "loader": "replace_document (product write path)",
        "vectors": "fake" if identity is None else identity.key,
        "chunks": written,
        "documents": made,
        "sentences_in_pool": len(pool.sentences),
        "pool_seconds": pool_seconds,
        "write_seconds": write_seconds,
        "write_chunks_per_s": written / write_seconds,
    }
    (db.parent / BUILT_MARKER).write_text(json.dumps(info))
    return info


def bulk_build(db: Path, size: int, kb_name: str, seed: int) -> dict[str, Any]:
    """The 1M store, faster than a transaction per document: the product's own row helpers
    (``upsert_document``, ``chunk_row``, ``sections_of``), many documents per transaction,
    vectors (encoded as the store keeps them), and the FTS5 index built once at the end with
    the product's ``rebuild`` statement instead of row by row. The search path measured
    afterwards is the product's, unchanged."""
    from lorebase.store.document_text import spans_of, stored_text
    from lorebase.store.relational import rows
    from lorebase.store.sqlite import writes
    from lorebase.store.sqlite.database import DIALECT
    from lorebase.store.sqlite.store import connect
    from lorebase.store.states import DocumentState

    fake = FakeEmbedder(DIM)
    started = time.perf_counter()
    pool = sentence_pool(fake)
    pool_seconds = time.perf_counter() - started
    db.parent.mkdir(parents=True, exist_ok=True)
    for stale in db.parent.glob("lorebase.db*"):
        stale.unlink()
    with SqliteStore(db) as store:  # creates the schema through the product's migrations
        kb = store.create_kb(kb_name)
        store.set_kb_identity(kb.id, fake.identity)
    conn = connect(db)
    tx = DIALECT.bind(conn)
    identity_id = conn.execute("SELECT id FROM identities").fetchone()[0]
    started = time.perf_counter()
    written = made = pending = 0
    conn.execute("BEGIN IMMEDIATE")
    for doc in documents(pool, size, seed + size):
        chunks = doc.chunks
        document_id = rows.upsert_document(
            tx,
            kb.id,
            doc.document,
            state=DocumentState.INDEXED,
            reason=None,
            chunk_count=len(chunks),
            identity_key=fake.identity.key,
            settings_key=kb.chunk_settings.key,
            text=stored_text(doc.document.text, spans_of(chunks)),
            purge=lambda _tx, _id: None,  # a new store: no document has old chunks
        )
        stored = writes.write_chunks(tx, kb.id, document_id, chunks, lexical=False)
        rowid_of = dict(
            conn.execute("SELECT id, rowid FROM chunks WHERE document_id = ?", (document_id,))
        )
        conn.executemany(
            "INSERT INTO vectors (chunk_rowid, identity_id, vector) VALUES (?, ?, ?)",
            [
                (rowid_of[sid], identity_id, blob)
                for sid, blob in zip(stored, to_blobs(doc.vectors), strict=True)
            ],
        )
        made += 1
        before, written = written, written + len(chunks)
        pending += len(chunks)
        if pending >= BULK_TRANSACTION_CHUNKS:
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
            pending = 0
        if written // PROGRESS_EVERY != before // PROGRESS_EVERY:
            rate = written / (time.perf_counter() - started)
            print(f"  {db.parent.name}: {written} chunks, {rate:.0f}/s", file=sys.stderr)
    conn.execute("COMMIT")
    rows_seconds = time.perf_counter() - started
    conn.execute("BEGIN IMMEDIATE")
    if fts.fts_present(conn):  # FTS5 is the engine; Tantivy builds at the first search
        conn.execute(fts.rebuild_fts_sql())
    # Every document stamped with the new generation: Tantivy reads the documents stamped
    # after its own generation (the store it opened above was already caught up, empty).
    writes.bump(tx, kb.id, every_document=True)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    write_seconds = time.perf_counter() - started
    info = {
        "loader": "bulk (FTS rebuilt once)",
        "chunks": written,
        "documents": made,
        "sentences_in_pool": len(pool.sentences),
        "pool_seconds": pool_seconds,
        "rows_seconds": rows_seconds,
        "fts_rebuild_seconds": write_seconds - rows_seconds,
        "write_seconds": write_seconds,
        "write_chunks_per_s": written / write_seconds,
    }
    (db.parent / BUILT_MARKER).write_text(json.dumps(info))
    return info
