"""The documents a search is restricted to, resolved once per version of its bases.

A filter (``--filter tags=policy``, a path prefix, a language) resolves to the ids of the
documents it leaves; both arms then search only those. At a million chunks, resolving a filter
that leaves half the documents, turning the ids into a set and into a vector index's row mask
cost more than the search itself (bench/filters.py). People repeat filters — the page re-runs a
search when a chip changes, an agent asks several questions under one filter — so a
:class:`Restriction` remembers what is derived from it (its set, each index's row mask; see
:class:`lorebase.store.sqlite.dense.LoadedIndex`), and a store that can tell when its bases
changed keeps the last few in a :class:`RestrictionCache`, keyed by the filter and checked
against the bases' version.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from functools import cached_property
from typing import Any, TypeVar, cast

T = TypeVar("T")

RESTRICTIONS = 16
"""Filters remembered per store: each may hold a row mask per vector index (a byte a chunk)."""


class Restriction(tuple[str, ...]):
    """Document ids in the order the store gave them; never changed once made."""

    def __new__(cls, ids: Iterable[str] = ()) -> Restriction:
        return super().__new__(cls, ids)

    @classmethod
    def of(cls, ids: Iterable[str]) -> Restriction:
        """``ids`` as a restriction: itself when it is one already."""
        return ids if isinstance(ids, Restriction) else cls(str(i) for i in ids)

    @cached_property
    def members(self) -> frozenset[str]:
        """The ids as a set, made on first use and kept."""
        return frozenset(self)

    @cached_property
    def _derived(self) -> dict[Hashable, Any]:
        return {}

    def derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """What ``make`` derives from these ids (or from the bases' version they were resolved
        at), made on first use of ``key`` and kept with them."""
        kept = self._derived
        if key not in kept:
            kept[key] = make()
        return cast("T", kept[key])


class RestrictionCache:
    """The last :data:`RESTRICTIONS` filters' documents, each valid while its bases' version
    is the one it was resolved at (thread-safe)."""

    def __init__(self, size: int = RESTRICTIONS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[Hashable, Restriction]] = OrderedDict()

    def get(self, key: Hashable, version: Hashable) -> Restriction | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None or found[0] != version:
                return None
            self._kept.move_to_end(key)
            return found[1]

    def put(self, key: Hashable, version: Hashable, restriction: Restriction) -> None:
        with self._lock:
            self._kept[key] = (version, restriction)
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
