"""The in-memory vector indexes of the SQLite store, kept in step with its vectors table.

:class:`DenseIndexes` holds one index per ``(kb_id, identity_id)``, tagged with the base's
generation when it was read. Every write to a base bumps its generation and stamps the
documents it changed, so one SELECT of generations tells which indexes are stale, and a
stale exact index catches up by document: the rows of changed and deleted documents are
marked dead, the changed documents' vectors appended (:class:`GrowingRows`). During a pass,
when every search finds the base changed, re-reading every vector made the dense arm ~200 ms
at 20k chunks, and copying the matrix on each refresh still ~15 ms.

From ``ann_threshold`` rows an index is an ANN graph (:mod:`lorebase.store.ann`) kept per base
and identity across reloads, saved under ``ann_folder`` (default: ``<db>.ann`` next to the
database file) and built in the background unless ``ann_background`` is false; it is read
whole when stale.

Not thread-safe on its own: the store calls :meth:`DenseIndexes.indexes_for` under a lock.
The returned :class:`LoadedIndex` snapshots are immutable and may be searched outside it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lorebase.store.ann import (
    ANN_THRESHOLD,
    GraphSlot,
    Rows,
    SideFile,
    build_ann_index,
    chunk_keys,
)
from lorebase.store.base import Scored
from lorebase.store.packed_ids import IdLookup, PackedIds
from lorebase.store.restriction import Restriction
from lorebase.store.sqlite.rows import base_generations
from lorebase.store.vectors import (
    VECTOR_DTYPE,
    ExactIndex,
    Int8Rows,
    VectorIndex,
    build_index,
    matrix_from_blobs,
    records_from_blobs,
)

LOAD_BATCH_ROWS = 5_000
"""Vectors are read in batches straight into a preallocated matrix: reading them all first
held every blob twice more (the row tuples, then the joined bytes), ~3x the matrix at peak.
Stored int8 blobs (388 B) are small objects to Python's allocator, whose arenas a few
survivors keep alive: at 50k rows, batches of 20k left ~430 B per chunk more resident than
batches of 5k (1,798 against 2,294 B per chunk in all, bench/resident.py)."""

REFRESH_SHARE = 0.5
"""A stale exact index catches up by document unless more than this share of the base's
documents changed, or dead rows would outnumber live ones; then it is read whole."""

STOP_TIMEOUT_S = 30.0
"""How long closing waits for a graph build to reach the end of a batch."""

GROWTH = 1.25
"""Spare rows allocated when the matrix must grow: appends copy the matrix rarely, and a base
never holds much more memory than its vectors need."""

MASKS_PER_INDEX = 8
"""Restrictions whose row masks an index keeps (a byte per row each)."""


@dataclass(frozen=True, slots=True)
class LoadedVectors:
    """Vectors of one base (or some of its documents) under one identity, as read."""

    matrix: Rows  # (rows, dim): float32, or the stored int8 form when ANN keys are asked for
    chunk_ids: Sequence[str]  # of each row (PackedIds for a whole base)
    document_ids: list[str]  # distinct, in first-seen order
    codes: np.ndarray  # each row's document, as an index into document_ids
    keys: np.ndarray | None = None  # ANN keys of each row (see ann.chunk_keys), when asked for


@dataclass(slots=True)
class GrowingRows:
    """The storage behind the exact indexes of one base and identity. Rows are only appended
    after the last one and never changed, so a snapshot that sees the first ``n`` rows stays
    valid while later snapshots append (a grown matrix is a new array; old snapshots keep
    theirs). ``present`` holds the documents with live rows in the newest snapshot."""

    matrix: np.ndarray
    codes: np.ndarray
    chunk_ids: PackedIds
    document_ids: list[str]
    code_of: dict[str, int]
    size: int
    present: set[str] = field(default_factory=set)
    lookup: IdLookup | None = None  # the ids' rows, made at the first search that needs them

    @classmethod
    def of(cls, vectors: LoadedVectors) -> GrowingRows:
        assert isinstance(vectors.matrix, np.ndarray)  # exact loads are float32
        return cls(
            matrix=vectors.matrix,
            codes=vectors.codes,
            chunk_ids=PackedIds(vectors.chunk_ids),
            document_ids=list(vectors.document_ids),
            code_of={doc: code for code, doc in enumerate(vectors.document_ids)},
            size=len(vectors.chunk_ids),
            present=set(vectors.document_ids),
        )

    def append(self, fresh: LoadedVectors) -> None:
        count = len(fresh.chunk_ids)
        if self.size + count > self.matrix.shape[0]:
            capacity = int((self.size + count) * GROWTH) + 1
            matrix = np.empty((capacity, self.matrix.shape[1]), dtype=VECTOR_DTYPE)
            matrix[: self.size] = self.matrix[: self.size]
            codes = np.empty(capacity, dtype=np.int32)
            codes[: self.size] = self.codes[: self.size]
            self.matrix, self.codes = matrix, codes
        for doc in fresh.document_ids:
            if doc not in self.code_of:
                self.code_of[doc] = len(self.document_ids)
                self.document_ids.append(doc)
        mapped = np.asarray([self.code_of[doc] for doc in fresh.document_ids], dtype=np.int32)
        end = self.size + count
        self.matrix[self.size : end] = fresh.matrix
        self.codes[self.size : end] = mapped[fresh.codes] if count else mapped[:0]
        self.chunk_ids.extend(fresh.chunk_ids)
        self.size = end


@dataclass(frozen=True, slots=True)
class LoadedIndex:
    """One base's vectors under one identity, as of ``generation``.

    Row ``i`` of the index is chunk ``chunk_ids[i]`` of document
    ``document_ids[document_codes[i]]``; the codes turn a document filter into a row mask.
    ``live`` (None: every row) leaves out rows whose document changed or went since they were
    read. ``rows`` is the growing storage of an exact index (None for an ANN one).
    """

    generation: int
    index: VectorIndex
    chunk_ids: Sequence[str]
    document_ids: list[str]
    document_codes: np.ndarray
    created_at: float = 0.0  # of the base: an id reused by a new base is another base
    live: np.ndarray | None = None
    rows: GrowingRows | None = None
    # Each document's code, filled on the first filtered search (document_ids only grows).
    code_of: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # The row masks of the last few restrictions, by identity (each entry holds its
    # restriction, so an id is not reused while it is kept); a refreshed index starts afresh.
    masks: dict[int, tuple[Restriction, np.ndarray | None]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def allowed(self, document_ids: Sequence[str] | None) -> np.ndarray | None:
        """The row mask: live rows, of the filter's documents if there is a filter (made once
        per restriction: a repeated filter costs no pass over the rows)."""
        if document_ids is None:
            return self.live
        if not isinstance(document_ids, Restriction):
            return self._mask(document_ids)
        kept = self.masks.get(id(document_ids))
        if kept is not None and kept[0] is document_ids:
            return kept[1]
        mask = self._mask(document_ids)
        while len(self.masks) >= MASKS_PER_INDEX:  # the oldest goes (searches run at once)
            try:
                del self.masks[next(iter(self.masks))]
            except (KeyError, RuntimeError, StopIteration):
                break
        self.masks[id(document_ids)] = (document_ids, mask)
        return mask

    def _mask(self, document_ids: Sequence[str]) -> np.ndarray | None:
        known = self.code_of
        for code in range(len(known), len(self.document_ids)):
            known[self.document_ids[code]] = code
        chosen = np.zeros(len(self.document_ids), dtype=bool)
        codes = [found for doc in document_ids if (found := known.get(doc)) is not None]
        chosen[np.asarray(codes, dtype=np.int64)] = True
        mask: np.ndarray = chosen[self.document_codes]  # a lookup per row, not np.isin's sort
        return mask if self.live is None else mask & self.live

    def scores_of(self, query: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float] | None:
        """The inner products of ``query`` with these chunks' live rows (the chunks this
        index holds), as :meth:`search` scores them; None for an ANN index (its rows are
        not kept in id order: the caller reads the vectors)."""
        index = self.index
        found = self._live_rows(chunk_ids)
        if found is None or not isinstance(index, ExactIndex):
            return None
        if not found:
            return {}
        products = index.products(query, np.fromiter(found.values(), dtype=np.int64))
        return dict(zip(found, products.tolist(), strict=True))

    def _live_rows(self, chunk_ids: Sequence[str]) -> dict[str, int] | None:
        """The live row of each of ``chunk_ids`` this index holds (its last: a chunk written
        again is appended); None for an ANN index (its rows are not kept in id order)."""
        rows = self.rows
        if rows is None or not isinstance(self.index, ExactIndex):
            return None
        # Kept with the rows: a snapshot after appends merges them in instead of sorting all.
        size = self.index.size
        lookup = rows.lookup
        if lookup is None or lookup.size < size:
            grown = IdLookup(rows.chunk_ids, size) if lookup is None else lookup.grown(size)
            lookup = rows.lookup = grown
        live = self.live
        held = zip(chunk_ids, lookup.rows(chunk_ids, size), strict=True)
        if live is None:  # no row has died since the index was read
            return {chunk_id: places[-1] for chunk_id, places in held if places}
        found: dict[str, int] = {}
        for chunk_id, places in held:
            alive = [row for row in places if live[row]]
            if alive:
                found[chunk_id] = alive[-1]
        return found

    def documents_of(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The document of each of ``chunk_ids`` this index holds live (none for an ANN
        index): what collapsing a search's candidates by document asks, without the rows."""
        found = self._live_rows(chunk_ids) or {}
        codes, names = self.document_codes, self.document_ids
        return {chunk_id: names[codes[row]] for chunk_id, row in found.items()}

    def search(self, query: np.ndarray, limit: int, document_ids: Sequence[str] | None) -> Scored:
        positions, scores = self.index.search(query, limit, self.allowed(document_ids))
        ids = self.chunk_ids
        chosen = ids.at(positions) if isinstance(ids, PackedIds) else [ids[p] for p in positions]
        return list(zip(chosen, scores.tolist(), strict=True))


class DenseIndexes:
    """In-memory vector indexes per ``(kb_id, identity_id)`` (see the module's doc)."""

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

    def documents_of(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], chunk_ids: Sequence[str]
    ) -> dict[str, str]:
        """The document of each of ``chunk_ids`` that an exact index of these bases, loaded
        as of ``conn``'s snapshot (any identity: a chunk's document is the same under every
        model), holds live; the others are not known here (nothing is loaded or refreshed)."""
        current = {kb_id: (gen, made) for kb_id, gen, made in base_generations(conn, kb_ids)}
        found: dict[str, str] = {}
        for (kb_id, _), loaded in list(self._loaded.items()):
            if current.get(kb_id) != (loaded.generation, loaded.created_at):
                continue
            rest = [chunk_id for chunk_id in chunk_ids if chunk_id not in found]
            if not rest:
                break
            found.update(loaded.documents_of(rest))
        return found

    def indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], identity_id: int, dim: int
    ) -> list[LoadedIndex]:
        bases = {
            kb_id: (generation, created_at)
            for kb_id, generation, created_at in base_generations(conn, kb_ids)
        }
        self.forget(set(kb_ids) - set(bases))  # deleted, perhaps by another process
        indexes = []
        for kb_id, (generation, created_at) in bases.items():
            key = (kb_id, identity_id)
            loaded = self._loaded.get(key)
            if loaded is not None and loaded.created_at != created_at:
                self.forget({kb_id})  # deleted by another process, its id given to a new base
                loaded = None
            if loaded is not None and loaded.generation > generation:
                # This search's snapshot is older than the cached index (another search
                # refreshed it first): answer from the newer one rather than step back.
                indexes.append(loaded)
                continue
            if loaded is not None and loaded.generation < generation:
                loaded = self._refresh(conn, loaded, kb_id, identity_id, dim, generation)
            if loaded is None:
                loaded = self._load(conn, kb_id, identity_id, dim, generation, created_at)
            self._loaded[key] = loaded
            indexes.append(loaded)
        return indexes

    def graph(self, kb_id: int, identity_id: int) -> GraphSlot | None:
        """The ANN graph slot of a base and identity, if it has one (benchmarks wait on it)."""
        return self._graphs.get((kb_id, identity_id))

    def close(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop the graph builds in progress (see :meth:`GraphSlot.stop`)."""
        for slot in list(self._graphs.values()):
            slot.stop(timeout)

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
        """``loaded`` brought to ``generation`` by document; None when it is better read
        whole (an ANN index, most documents changed, mostly dead rows, or the ANN threshold
        reached)."""
        rows = loaded.rows
        if rows is None or rows.size != loaded.index.size:
            return None
        current = dict(
            conn.execute("SELECT id, generation FROM documents WHERE kb_id = ?", (kb_id,))
        )
        changed = [doc for doc, stamped in current.items() if stamped > loaded.generation]
        gone = [doc for doc in rows.present if doc not in current]
        if len(changed) + len(gone) > REFRESH_SHARE * max(1, len(current)):
            return None
        fresh = load_document_vectors(conn, changed, identity_id, dim)
        live = np.ones(rows.size, dtype=bool) if loaded.live is None else loaded.live.copy()
        dropped = [rows.code_of[doc] for doc in (*changed, *gone) if doc in rows.code_of]
        if dropped:
            live &= ~np.isin(rows.codes[: rows.size], np.asarray(dropped, dtype=np.int32))
        alive = int(live.sum()) + len(fresh.chunk_ids)
        dead = rows.size - int(live.sum())
        if alive >= self.ann_threshold or dead > alive:
            return None
        rows.append(fresh)
        rows.present.difference_update(changed, gone)
        rows.present.update(fresh.document_ids)
        live = np.concatenate([live, np.ones(len(fresh.chunk_ids), dtype=bool)])
        return self._snapshot(rows, generation, loaded.created_at, None if live.all() else live)

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
            return self._snapshot(GrowingRows.of(vectors), generation, created_at, None)
        slot = self._graphs.get(key)
        if slot is None:
            side = self._side_file(conn, kb_id, identity_id)
            slot = GraphSlot(dim, side, background=self.ann_background)
            self._graphs[key] = slot
        index = build_ann_index(vectors.matrix, vectors.keys, slot, generation)
        return LoadedIndex(
            generation, index, vectors.chunk_ids, vectors.document_ids, vectors.codes, created_at
        )

    @staticmethod
    def _snapshot(
        rows: GrowingRows, generation: int, created_at: float, live: np.ndarray | None
    ) -> LoadedIndex:
        return LoadedIndex(
            generation=generation,
            index=build_index(rows.matrix[: rows.size]),
            chunk_ids=rows.chunk_ids,
            document_ids=rows.document_ids,
            document_codes=rows.codes[: rows.size],
            created_at=created_at,
            live=live,
            rows=rows,
        )

    def _side_file(self, conn: sqlite3.Connection, kb_id: int, identity_id: int) -> SideFile | None:
        folder = self.ann_folder
        if folder is None:
            database = conn.execute("PRAGMA database_list").fetchone()[2]
            if not database:  # an in-memory database: nothing to keep a file next to
                return None
            folder = Path(database).with_suffix(".ann")
        return SideFile.at(folder, kb_id, identity_id)


_LOAD_VECTORS_SQL = (
    "SELECT c.id, c.document_id, v.vector, c.content_hash FROM documents AS d "
    "JOIN chunks AS c ON c.document_id = d.id "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    "WHERE d.kb_id = ?"
)
"""No ORDER BY: row order does not matter to an index, and sorting 100k rows with their blobs
tripled the load time (0.27 s -> 0.9 s at 100k x 384)."""


def load_vectors(
    conn: sqlite3.Connection, kb_id: int, identity_id: int, dim: int, keys_from: int
) -> LoadedVectors:
    """Read the vectors of a base and identity; ANN keys too when there are ``keys_from``
    rows or more, and then the rows stay in their stored int8 form (:class:`Int8Rows`, a
    quarter of float32's memory next to the graph).

    The matrix is allocated once from the documents' chunk counts (an upper bound, read from
    the small documents table) and filled batch by batch.
    """
    capacity = conn.execute(
        "SELECT coalesce(sum(chunk_count), 0) FROM documents WHERE kb_id = ?", (kb_id,)
    ).fetchone()[0]
    want_keys = capacity >= keys_from
    int8 = _int8_rows(capacity if want_keys else 0, dim)
    matrix = np.empty((0 if want_keys else capacity, dim), dtype=VECTOR_DTYPE)
    chunk_ids = PackedIds()
    code_of: dict[str, int] = {}
    codes: list[int] = []
    keys: list[np.ndarray] = []
    cursor = conn.execute(_LOAD_VECTORS_SQL, (identity_id, kb_id))
    while batch := cursor.fetchmany(LOAD_BATCH_ROWS):
        start, end = len(chunk_ids), len(chunk_ids) + len(batch)
        blobs = [row[2] for row in batch]
        if want_keys:  # kept as stored
            if end > len(int8):  # counts disagree: grow (never expected)
                more = _int8_rows(len(batch), dim)
                int8 = Int8Rows(
                    np.concatenate([int8.codes, more.codes]),
                    np.concatenate([int8.scales, more.scales]),
                )
            records = records_from_blobs(blobs, dim)
            int8.codes[start:end] = records["codes"]
            int8.scales[start:end] = records["scale"]
        else:  # decoded
            if end > matrix.shape[0]:
                matrix = np.concatenate([matrix, np.empty((len(batch), dim), VECTOR_DTYPE)])
            matrix_from_blobs(blobs, dim, out=matrix[start:end])
        ids = [row[0] for row in batch]
        chunk_ids.extend(ids)
        codes.extend(code_of.setdefault(row[1], len(code_of)) for row in batch)
        if want_keys:
            keys.append(chunk_keys(ids, [row[3] for row in batch]))
    count = len(chunk_ids)
    rows: Rows
    if want_keys:
        if count < len(int8):  # let the unused rows go
            int8 = Int8Rows(int8.codes[:count].copy(), int8.scales[:count].copy())
        # Fewer rows than the counts promised, below the threshold: an exact index, float32.
        rows = int8 if count >= keys_from else int8.decode()
    else:
        rows = matrix[:count].copy() if count < matrix.shape[0] else matrix
    with_keys = want_keys and count >= keys_from
    return LoadedVectors(
        matrix=rows,
        chunk_ids=chunk_ids,
        document_ids=list(code_of),
        codes=np.asarray(codes, dtype=np.int32),
        keys=np.concatenate(keys) if with_keys and keys else None,
    )


def _int8_rows(count: int, dim: int) -> Int8Rows:
    return Int8Rows(np.empty((count, dim), dtype=np.int8), np.empty(count, dtype=np.float32))


_DOCUMENT_VECTORS_SQL = (
    "SELECT c.id, c.document_id, v.vector FROM chunks AS c "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? "
    "WHERE c.document_id IN (SELECT value FROM json_each(?))"
)


def load_document_vectors(
    conn: sqlite3.Connection, document_ids: Sequence[str], identity_id: int, dim: int
) -> LoadedVectors:
    """The vectors of these documents under one identity (no ANN keys)."""
    found = (
        conn.execute(_DOCUMENT_VECTORS_SQL, (identity_id, json.dumps(list(document_ids))))
        if document_ids
        else []
    )
    rows = list(found)
    code_of: dict[str, int] = {}
    codes = [code_of.setdefault(row[1], len(code_of)) for row in rows]
    return LoadedVectors(
        matrix=matrix_from_blobs([row[2] for row in rows], dim),
        chunk_ids=[row[0] for row in rows],
        document_ids=list(code_of),
        codes=np.asarray(codes, dtype=np.int32),
    )
