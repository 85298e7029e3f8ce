"""The chunk ids of an in-memory index's rows, packed: 16 bytes a row instead of a string each.

A stored chunk id is 32 hex digits (:func:`lorebase.store.stored_chunk_id`). As Python strings
in a list they cost ~89 bytes a row (an 81-byte object and an 8-byte slot): ~89 MB at 1M rows,
more than the rest of an index's bookkeeping together. Packed as raw bytes in one array they
cost 16, and only the ``k`` ids a search returns are turned back into strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np

from lorebase.store import STORED_CHUNK_ID_HEX_CHARS

ID_BYTES = STORED_CHUNK_ID_HEX_CHARS // 2
GROWTH = 1.25


class PackedIds(Sequence[str]):
    """Append-only ids of index rows. Ids that are not lower-case hex of the stored length
    (a test's ``"c1"``) turn the whole store into a plain list, which behaves the same.

    Rows are only appended, never changed, so a snapshot that reads the first ``n`` ids stays
    valid while a writer appends (a grown array is a new one; the old rows are copied into it
    before it is swapped in)."""

    __slots__ = ("_list", "_raw", "_size")

    def __init__(self, ids: Sequence[str] = ()) -> None:
        self._raw = np.empty((0, ID_BYTES), dtype=np.uint8)
        self._size = 0
        self._list: list[str] | None = None
        self.extend(ids)

    def __len__(self) -> int:
        return self._size if self._list is None else len(self._list)

    def __getitem__(self, position: int) -> str:  # type: ignore[override]
        listed = self._list
        if listed is not None:
            return listed[position]
        if position < 0:
            position += self._size
        if not 0 <= position < self._size:
            raise IndexError("row out of range")
        return bytes(self._raw[position]).hex()

    def __iter__(self) -> Iterator[str]:
        for position in range(len(self)):
            yield self[position]

    def at(self, positions: Sequence[int] | np.ndarray) -> list[str]:
        """The ids of these rows, in order: one copy and one hex conversion for all of them
        (a search's hundred ids cost ~1.5 us each one at a time)."""
        listed = self._list
        if listed is not None:
            return [listed[position] for position in positions]
        rows = np.asarray(positions, dtype=np.int64).reshape(-1)
        if rows.size and (rows.min() < -self._size or rows.max() >= self._size):
            raise IndexError("row out of range")
        joined = self._raw[: self._size][rows].tobytes().hex()
        size = 2 * ID_BYTES
        return [joined[start : start + size] for start in range(0, len(joined), size)]

    @property
    def nbytes(self) -> int:
        """Bytes held for the ids (the array, or the strings and the list's slots)."""
        if self._list is not None:
            return sum(49 + len(chunk_id) for chunk_id in self._list) + 8 * len(self._list)
        return int(self._raw.nbytes)

    def extend(self, ids: Sequence[str]) -> None:
        if not len(ids):
            return
        if self._list is not None:
            self._list.extend(ids)
            return
        packed = _pack(ids)
        if packed is None:
            listed = [*self, *ids]
            self._list = listed
            self._raw = np.empty((0, ID_BYTES), dtype=np.uint8)
            return
        end = self._size + packed.shape[0]
        if end > self._raw.shape[0]:
            grown = np.empty((int(end * GROWTH) + 1, ID_BYTES), dtype=np.uint8)
            grown[: self._size] = self._raw[: self._size]
            grown[self._size : end] = packed
            self._raw = grown
        else:
            self._raw[self._size : end] = packed
        self._size = end


def _pack(ids: Sequence[str]) -> np.ndarray | None:
    """The ids as rows of raw bytes, or None when one is not lower-case hex of the stored
    length (it would not come back as it was)."""
    if any(len(chunk_id) != STORED_CHUNK_ID_HEX_CHARS for chunk_id in ids):
        return None
    joined = "".join(ids)
    try:
        raw = bytes.fromhex(joined)
    except ValueError:
        return None
    if raw.hex() != joined:
        return None
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(ids), ID_BYTES)


class IdLookup:
    """The rows holding each of some ids among the first ``size`` rows of :class:`PackedIds`,
    from the rows' first 8 bytes, sorted (16 bytes a row with their order; a dict of the ids
    would hold ~150): what fills in the cosines of a search's keyword candidates without
    reading their vectors from the database again. Immutable: rows appended since are merged
    into a new lookup (:meth:`grown`), never sorted again."""

    __slots__ = ("_found", "_ids", "_keys", "_listed", "_order", "size")

    def __init__(
        self, ids: PackedIds, size: int, merged: tuple[np.ndarray, np.ndarray] | None = None
    ) -> None:
        self._ids = ids
        self.size = size
        # What was looked up among all ``size`` rows, by id (this lookup never changes: a
        # grown one starts afresh): a base's searches ask about the same candidates often.
        self._found: dict[str, tuple[int, ...]] = {}
        self._listed: dict[str, list[int]] | None = None
        self._keys: np.ndarray = np.zeros(0, dtype=np.uint64)
        self._order: np.ndarray = np.zeros(0, dtype=np.int64)
        if ids._list is not None:
            self._listed = {}
            for row, chunk_id in enumerate(ids._list[:size]):
                self._listed.setdefault(chunk_id, []).append(row)
        elif merged is not None:
            self._keys, self._order = merged
        else:
            keys = _first_words(ids._raw[:size])
            self._order = np.argsort(keys, kind="stable")
            self._keys = keys[self._order]

    def grown(self, size: int) -> IdLookup:
        """This lookup over the first ``size`` rows: the rows since ``self.size`` merged in."""
        if size <= self.size:
            return self
        if self._listed is not None or self._ids._list is not None:  # ids kept as a list
            return IdLookup(self._ids, size)
        fresh = _first_words(self._ids._raw[self.size : size])
        order = np.argsort(fresh, kind="stable")
        fresh = fresh[order]
        at = np.searchsorted(self._keys, fresh, side="right")
        keys = np.insert(self._keys, at, fresh)
        rows = np.insert(self._order, at, order + self.size)
        return IdLookup(self._ids, size, (keys, rows))

    def rows(self, wanted: Sequence[str], within: int | None = None) -> list[tuple[int, ...]]:
        """Each wanted id's rows below ``within`` (default: all it holds), in row order (none
        for an id not held). Lookups among all rows are remembered (at most
        :data:`REMEMBERED_IDS`)."""
        if within is not None and within < self.size:
            return self._rows(wanted, within)
        found = self._found
        known = [found.get(chunk_id) for chunk_id in wanted]
        unknown = [chunk_id for chunk_id, rows in zip(wanted, known, strict=True) if rows is None]
        if unknown:
            fresh = dict(zip(unknown, self._rows(unknown, self.size), strict=True))
            if len(found) + len(fresh) > REMEMBERED_IDS:
                found = self._found = {}
            if len(fresh) <= REMEMBERED_IDS:
                found.update(fresh)
            known = [
                fresh[c] if rows is None else rows for c, rows in zip(wanted, known, strict=True)
            ]
        return known  # type: ignore[return-value]  # every None was filled

    def _rows(self, wanted: Sequence[str], within: int) -> list[tuple[int, ...]]:
        limit = min(within, self.size)
        if self._listed is not None:
            return [tuple(r for r in self._listed.get(c, []) if r < limit) for c in wanted]
        out: list[tuple[int, ...]] = [() for _ in wanted]
        joined = "".join(wanted)
        stored_size = set(map(len, wanted)) == {STORED_CHUNK_ID_HEX_CHARS}
        if stored_size and _HEX.fullmatch(joined):
            hexes = list(enumerate(wanted))  # the usual case: every id stored, checked at once
        else:
            hexes = [
                (n, chunk_id) for n, chunk_id in enumerate(wanted) if _STORED.fullmatch(chunk_id)
            ]
            joined = "".join(chunk_id for _, chunk_id in hexes)
        if not hexes or not self._keys.size:
            return out
        raw = bytes.fromhex(joined)
        packed = np.frombuffer(raw, dtype=np.uint8).reshape(len(hexes), ID_BYTES)
        keys = _first_words(packed)
        lows = np.searchsorted(self._keys, keys, side="left")
        highs = np.searchsorted(self._keys, keys, side="right")
        stored = self._ids._raw
        counts = highs - lows
        single = counts == 1  # the usual case, checked at once
        rows = self._order[lows[single]]
        same = (stored[rows] == packed[single]).all(axis=1)
        places = [hexes[at][0] for at in np.flatnonzero(single).tolist()]
        for n, row, equal in zip(places, rows.tolist(), same.tolist(), strict=True):
            if equal and row < limit:
                out[n] = (row,)
        # The id in several rows (a document read again), or a collision: one by one.
        for at in np.flatnonzero(counts > 1).tolist():
            low, high = int(lows[at]), int(highs[at])
            held = sorted(int(row) for row in self._order[low:high] if row < limit)
            out[hexes[at][0]] = tuple(
                row for row in held if np.array_equal(stored[row], packed[at])
            )
        return out


REMEMBERED_IDS = 16_384
"""Ids a lookup remembers the rows of: ~3 MB, the candidates of ~100 searches."""


def _first_words(raw: np.ndarray) -> np.ndarray:
    """Each packed id's first 8 bytes as one unsigned 64-bit key."""
    return np.ascontiguousarray(raw[:, :8]).view(">u8").ravel().astype(np.uint64)


_STORED = re.compile(f"[0-9a-f]{{{STORED_CHUNK_ID_HEX_CHARS}}}")
_HEX = re.compile("[0-9a-f]*")
