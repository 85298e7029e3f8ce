"""The read half of the SQLite store: keyword search, dense search and hydration.

Functions here take an open connection and run inside whatever transaction and lock the store
holds. The one piece of state is :class:`DenseIndexes`, the in-memory vector matrices.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lorebase.errors import NotFound
from lorebase.store.ann import ANN_THRESHOLD, GraphSlot, SideFile, build_ann_index, chunk_keys
from lorebase.store.base import Scored, StoredChunk
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.rows import (
    STORED_CHUNK_SELECT,
    batches,
    json_ids,
    placeholders,
    stored_chunk_from_row,
)
from lorebase.store.vectors import (
    VECTOR_DTYPE,
    ExactIndex,
    VectorIndex,
    build_index,
    matrix_from_blobs,
)

_KB_FILTER = "c.kb_id IN (SELECT value FROM json_each(?))"


def keyword_search(
    conn: sqlite3.Connection,
    kb_ids: Sequence[int],
    query: str,
    limit: int,
    document_ids: Sequence[str] | None,
) -> Scored:
    """BM25 hits for raw user text; nothing is queried when no searchable term is left.

    On a large index the OR query runs as the split plan of :mod:`fts` (common terms counted
    only in rows that hold a rare one); the results of its queries are merged by score, then
    rowid, as one query orders them.
    """
    terms = fts.search_terms(query)
    if not terms or limit <= 0 or not kb_ids or document_ids == []:
        return []
    base: list[object] = [json_ids(kb_ids)]
    if document_ids is not None:
        base.append(json_ids(document_ids))
    sql = fts.keyword_search_sql(with_documents=document_ids is not None)
    plan = keyword_plan(conn, terms)
    rows: list[tuple[str, float, int]] = []
    for match in plan:
        rows.extend(conn.execute(sql, [match, *base, limit]))
    if len(plan) > 1:
        rows = merge_ranked(rows, limit)
    return [(chunk_id, float(score)) for chunk_id, score, _ in rows]


def keyword_plan(conn: sqlite3.Connection, terms: Sequence[str]) -> list[str]:
    """The MATCH expressions to run for these terms: the plain OR query, or on a large index
    whose terms would make it score many rows, the two queries of the split plan."""
    if len(terms) < 2:
        return [fts.match_any(terms)]
    rows = conn.execute(fts.indexed_rows_sql()).fetchone()[0]
    if rows < fts.SPLIT_FROM_ROWS:
        return [fts.match_any(terms)]
    frequencies = term_frequencies(conn, terms, rows)
    budget = int(fts.ANCHOR_SHARE * rows)
    if sum(frequencies.values()) <= budget:
        return [fts.match_any(terms)]
    anchors = fts.choose_anchors(frequencies, budget)
    others = [term for term in terms if term not in anchors]
    if not others:
        return [fts.match_any(terms)]
    return list(fts.split_match_queries(anchors, others))


def term_frequencies(conn: sqlite3.Connection, terms: Sequence[str], rows: int) -> dict[str, int]:
    """Each term's document frequency, counted up to ``DF_CAP_SHARE`` of the rows and
    remembered per connection (see :func:`fts.term_stats_sql`)."""
    create, read, write = fts.term_stats_sql()
    conn.execute(create)
    bucket = fts.stats_bucket(rows)
    cap = max(1, int(fts.DF_CAP_SHARE * rows))
    frequencies: dict[str, int] = {}
    for term in terms:
        folded = term.casefold()
        cached = conn.execute(read, (folded, bucket)).fetchone()
        if cached is None:
            cached = conn.execute(fts.term_count_sql(), (fts.quote_term(term), cap)).fetchone()
            conn.execute(write, (folded, bucket, cached[0]))
        frequencies[term] = int(cached[0])
    return frequencies


def merge_ranked(rows: list[tuple[str, float, int]], limit: int) -> list[tuple[str, float, int]]:
    """The best ``limit`` of several ranked lists: score descending, then rowid (the order of
    one ``keyword_search_sql`` query), each chunk once."""
    seen: set[str] = set()
    merged = []
    for row in sorted(rows, key=lambda row: (-row[1], row[2])):
        if row[0] not in seen:
            seen.add(row[0])
            merged.append(row)
    return merged[:limit]


def get_chunks(
    conn: sqlite3.Connection, kb_ids: Sequence[int], chunk_ids: Sequence[str]
) -> list[StoredChunk]:
    """Hydrated chunks in the order asked; ids outside ``kb_ids`` (or unknown) are left out."""
    if not kb_ids or not chunk_ids:
        return []
    found: dict[str, StoredChunk] = {}
    unique = list(dict.fromkeys(chunk_ids))
    for batch in batches(unique):
        sql = f"{STORED_CHUNK_SELECT} WHERE c.id IN ({placeholders(len(batch))}) AND {_KB_FILTER}"
        for row in conn.execute(sql, [*batch, json_ids(kb_ids)]):
            chunk = stored_chunk_from_row(row)
            found[chunk.id] = chunk
    return [found[chunk_id] for chunk_id in chunk_ids if chunk_id in found]


def neighbors(
    conn: sqlite3.Connection, kb_ids: Sequence[int], chunk_id: str, window: int
) -> list[StoredChunk]:
    """The chunk and up to ``window`` chunks each side of it in its document, in order."""
    row = (
        conn.execute(
            f"SELECT c.document_id, c.ordinal FROM chunks AS c WHERE c.id = ? AND {_KB_FILTER}",
            (chunk_id, json_ids(kb_ids)),
        ).fetchone()
        if kb_ids
        else None
    )
    if row is None:
        raise NotFound("no such chunk in these knowledge bases; search again for a current id")
    document_id, ordinal = row
    window = max(0, window)
    sql = (
        f"{STORED_CHUNK_SELECT} WHERE c.document_id = ? AND c.ordinal BETWEEN ? AND ? "
        "ORDER BY c.ordinal"
    )
    rows = conn.execute(sql, (document_id, ordinal - window, ordinal + window))
    return [stored_chunk_from_row(r) for r in rows]


@dataclass(frozen=True, slots=True)
class LoadedIndex:
    """One knowledge base's vectors under one identity, as loaded at ``generation``.

    Row ``i`` of the index is chunk ``chunk_ids[i]`` of document
    ``document_ids[document_codes[i]]``; the codes turn a document filter into a row mask.
    """

    generation: int
    index: VectorIndex
    chunk_ids: list[str]
    document_ids: list[str]
    document_codes: np.ndarray
    created_at: float = 0.0  # of the base: an id reused by a new base is another base

    def allowed(self, document_ids: Sequence[str] | None) -> np.ndarray | None:
        """The row mask for a document filter (None: every row)."""
        if document_ids is None:
            return None
        wanted = set(document_ids)
        codes = [code for code, doc in enumerate(self.document_ids) if doc in wanted]
        return np.isin(self.document_codes, np.asarray(codes, dtype=np.int32))

    def search(self, query: np.ndarray, limit: int, document_ids: Sequence[str] | None) -> Scored:
        positions, scores = self.index.search(query, limit, self.allowed(document_ids))
        return [(self.chunk_ids[p], float(s)) for p, s in zip(positions, scores, strict=True)]


_LOAD_VECTORS_SQL = (
    "SELECT c.id, c.document_id, v.vector, c.content_hash FROM documents AS d "
    "JOIN chunks AS c ON c.document_id = d.id "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    "WHERE d.kb_id = ?"
)
"""No ORDER BY: row order does not matter to an index, and sorting 100k rows with their blobs
tripled the load time (0.27 s -> 0.9 s at 100k x 384)."""


LOAD_BATCH_ROWS = 20_000
"""Vectors are read in batches straight into a preallocated matrix: reading them all first
held every blob twice more (the row tuples, then the joined bytes), ~3x the matrix at peak."""


REFRESH_SHARE = 0.5
"""A stale exact index re-reads only its changed documents unless more than this share of
the base's documents changed; then it is loaded whole."""


class DenseIndexes:
    """In-memory vector indexes per ``(kb_id, identity_id)``, each tagged with the knowledge
    base generation it was loaded at. Every write to a base bumps its generation, so one
    SELECT of generations tells which indexes are stale; those are refreshed from the vectors
    table (the source of truth), in the same read transaction as that SELECT.

    A refresh re-reads only the documents stamped with a newer generation and drops the rows
    of documents that are gone: during a pass, when every search finds the base changed,
    re-reading every vector each time made the dense arm ~200 ms at 20k chunks instead of ~1.

    From ``ann_threshold`` rows, the index is an ANN graph (:mod:`lorebase.store.ann`) kept per
    base and identity across reloads, saved under ``ann_folder`` (default: ``<db>.ann`` next to
    the database file) and built in the background unless ``ann_background`` is false.

    Not thread-safe on its own: the store calls :meth:`indexes_for` under its lock. The
    returned indexes are immutable and may be searched outside it.
    """

    def __init__(
        self,
        *,
        ann_threshold: int = ANN_THRESHOLD,
        ann_folder: Path | None = None,
        ann_background: bool = True,
    ) -> None:
        self._loaded: dict[tuple[int, int], LoadedIndex] = {}
        self._graphs: dict[tuple[int, int], GraphSlot] = {}
        self.ann_threshold = ann_threshold
        self.ann_folder = ann_folder
        self.ann_background = ann_background

    def indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], identity_id: int, dim: int
    ) -> list[LoadedIndex]:
        bases = {
            kb_id: (generation, created_at)
            for kb_id, generation, created_at in conn.execute(
                "SELECT id, generation, created_at FROM knowledge_bases "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (json_ids(kb_ids),),
            )
        }
        self.forget(set(kb_ids) - set(bases))  # deleted, perhaps by another process
        indexes = []
        for kb_id, (generation, created_at) in bases.items():
            key = (kb_id, identity_id)
            loaded = self._loaded.get(key)
            if loaded is not None and loaded.created_at != created_at:
                self.forget({kb_id})  # deleted by another process, its id given to a new base
                loaded = None
            if loaded is not None and loaded.generation != generation:
                loaded = self._refresh(conn, loaded, kb_id, identity_id, dim, generation)
            if loaded is None:
                loaded = self._load(conn, kb_id, identity_id, dim, generation, created_at)
            self._loaded[key] = loaded
            indexes.append(loaded)
        return indexes

    def graph(self, kb_id: int, identity_id: int) -> GraphSlot | None:
        """The ANN graph slot of a base and identity, if it has one (benchmarks wait on it)."""
        return self._graphs.get((kb_id, identity_id))

    def forget(self, kb_ids: set[int]) -> None:
        """Drop the indexes of these knowledge bases (deleted ones)."""
        for key in [key for key in self._loaded if key[0] in kb_ids]:
            del self._loaded[key]
        for key in [key for key in self._graphs if key[0] in kb_ids]:
            del self._graphs[key]

    def _refresh(
        self,
        conn: sqlite3.Connection,
        loaded: LoadedIndex,
        kb_id: int,
        identity_id: int,
        dim: int,
        generation: int,
    ) -> LoadedIndex | None:
        """``loaded`` brought to ``generation``: the rows of changed and deleted documents
        dropped, the changed documents' vectors read again. None when it is better loaded
        whole: an ANN index, or one that would cross the ANN threshold or changed mostly."""
        if not isinstance(loaded.index, ExactIndex):
            return None
        current = dict(
            conn.execute("SELECT id, generation FROM documents WHERE kb_id = ?", (kb_id,))
        )
        changed = [doc for doc, stamped in current.items() if stamped > loaded.generation]
        gone = [doc for doc in loaded.document_ids if doc not in current]
        if len(changed) + len(gone) > REFRESH_SHARE * max(1, len(current)):
            return None
        fresh = load_document_vectors(conn, changed, identity_id, dim)
        dropped = {*changed, *gone}
        dropped_codes = [code for code, doc in enumerate(loaded.document_ids) if doc in dropped]
        keep = ~np.isin(loaded.document_codes, np.asarray(dropped_codes, dtype=np.int32))
        if int(keep.sum()) + len(fresh.chunk_ids) >= self.ann_threshold:
            return None
        document_ids = list(loaded.document_ids)
        code_of = {doc: code for code, doc in enumerate(document_ids)}
        for doc in fresh.document_ids:
            if doc not in code_of:
                code_of[doc] = len(document_ids)
                document_ids.append(doc)
        new_codes = np.asarray([code_of[doc] for doc in fresh.document_ids], dtype=np.int32)
        kept_rows = np.flatnonzero(keep)
        return LoadedIndex(
            generation=generation,
            index=build_index(np.concatenate([loaded.index.matrix[kept_rows], fresh.matrix])),
            chunk_ids=[loaded.chunk_ids[i] for i in kept_rows] + fresh.chunk_ids,
            document_ids=document_ids,
            document_codes=np.concatenate(
                [loaded.document_codes[kept_rows], new_codes[fresh.codes]]
            ),
            created_at=loaded.created_at,
        )

    def _load(
        self,
        conn: sqlite3.Connection,
        kb_id: int,
        identity_id: int,
        dim: int,
        generation: int,
        created_at: float,
    ) -> LoadedIndex:
        vectors = load_vectors(conn, kb_id, identity_id, dim, self.ann_threshold)
        key = (kb_id, identity_id)
        if vectors.keys is None:
            self._graphs.pop(key, None)
            index: VectorIndex = build_index(vectors.matrix)
        else:
            slot = self._graphs.get(key)
            if slot is None:
                side = self._side_file(conn, kb_id, identity_id)
                slot = GraphSlot(dim, side, background=self.ann_background)
                self._graphs[key] = slot
            index = build_ann_index(vectors.matrix, vectors.keys, slot, generation)
        return LoadedIndex(
            generation, index, vectors.chunk_ids, vectors.document_ids, vectors.codes, created_at
        )

    def _side_file(self, conn: sqlite3.Connection, kb_id: int, identity_id: int) -> SideFile | None:
        folder = self.ann_folder
        if folder is None:
            database = conn.execute("PRAGMA database_list").fetchone()[2]
            if not database:  # an in-memory database: nothing to keep a file next to
                return None
            folder = Path(database).with_suffix(".ann")
        return SideFile.at(folder, kb_id, identity_id)


@dataclass(frozen=True, slots=True)
class LoadedVectors:
    """One knowledge base's vectors under one identity, as read from the vectors table."""

    matrix: np.ndarray  # (rows, dim) float32
    chunk_ids: list[str]  # of each row
    document_ids: list[str]  # distinct, in first-seen order
    codes: np.ndarray  # each row's document, as an index into document_ids
    keys: np.ndarray | None  # ANN keys of each row (see ann.chunk_keys), when asked for


def load_vectors(
    conn: sqlite3.Connection, kb_id: int, identity_id: int, dim: int, keys_from: int
) -> LoadedVectors:
    """Read the vectors of a base and identity; ANN keys too when there are ``keys_from``
    rows or more.

    The matrix is allocated once from the documents' chunk counts (an upper bound, read from
    the small documents table) and filled batch by batch.
    """
    capacity = conn.execute(
        "SELECT coalesce(sum(chunk_count), 0) FROM documents WHERE kb_id = ?", (kb_id,)
    ).fetchone()[0]
    matrix = np.empty((capacity, dim), dtype=VECTOR_DTYPE)
    chunk_ids: list[str] = []
    code_of: dict[str, int] = {}
    codes: list[int] = []
    keys: list[np.ndarray] = []
    want_keys = capacity >= keys_from
    cursor = conn.execute(_LOAD_VECTORS_SQL, (identity_id, kb_id))
    while batch := cursor.fetchmany(LOAD_BATCH_ROWS):
        start = len(chunk_ids)
        if start + len(batch) > matrix.shape[0]:  # counts disagree: grow (never expected)
            matrix = np.concatenate([matrix, np.empty((len(batch), dim), VECTOR_DTYPE)])
        matrix[start : start + len(batch)] = matrix_from_blobs([row[2] for row in batch], dim)
        ids = [row[0] for row in batch]
        chunk_ids.extend(ids)
        codes.extend(code_of.setdefault(row[1], len(code_of)) for row in batch)
        if want_keys:
            keys.append(chunk_keys(ids, [row[3] for row in batch]))
    if len(chunk_ids) < matrix.shape[0]:
        matrix = matrix[: len(chunk_ids)].copy()  # let the unused rows go
    with_keys = want_keys and len(chunk_ids) >= keys_from
    return LoadedVectors(
        matrix=matrix,
        chunk_ids=chunk_ids,
        document_ids=list(code_of),
        codes=np.asarray(codes, dtype=np.int32),
        keys=np.concatenate(keys) if with_keys and keys else None,
    )


_DOCUMENT_VECTORS_SQL = (
    "SELECT c.id, c.document_id, v.vector FROM chunks AS c "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    "WHERE c.document_id IN (SELECT value FROM json_each(?))"
)


def load_document_vectors(
    conn: sqlite3.Connection, document_ids: Sequence[str], identity_id: int, dim: int
) -> LoadedVectors:
    """The vectors of these documents under one identity (no ANN keys)."""
    rows = (
        conn.execute(
            _DOCUMENT_VECTORS_SQL, (identity_id, json.dumps(list(document_ids)))
        ).fetchall()
        if document_ids
        else []
    )
    code_of: dict[str, int] = {}
    codes = [code_of.setdefault(row[1], len(code_of)) for row in rows]
    return LoadedVectors(
        matrix=matrix_from_blobs([row[2] for row in rows], dim),
        chunk_ids=[row[0] for row in rows],
        document_ids=list(code_of),
        codes=np.asarray(codes, dtype=np.int32),
        keys=None,
    )


def merge_top(results: Sequence[Scored], limit: int) -> Scored:
    """The best ``limit`` hits over several per-base lists (stable for equal scores)."""
    merged = [hit for result in results for hit in result]
    merged.sort(key=lambda hit: -hit[1])
    return merged[:limit]
