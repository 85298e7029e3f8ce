"""Which of a base's documents a listing shows: one value (:class:`DocumentListing`) that
every surface builds, and the pure function that applies it (:func:`page_of`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from lorebase.errors import InvalidInput
from lorebase.store.base import DocumentRecord
from lorebase.store.states import DocumentState

SortKey = Literal["name", "kind", "size", "chunks", "state", "updated_at"]
SORT_KEYS: tuple[str, ...] = get_args(SortKey)
MAX_PAGE = 1000
MAX_NAME_FILTER = 200

_FIELDS = {
    "kind": "kind",
    "size": "size",
    "chunks": "chunk_count",
    "state": "state",
    "updated_at": "updated_at",
}


@dataclass(frozen=True, slots=True)
class DocumentListing:
    """Documents in ``state`` whose name contains ``name_contains`` (any case), ordered by
    ``sort`` (as stored, by path, when None), one page of ``limit`` (all: None) from
    ``offset``."""

    state: DocumentState | None = None
    name_contains: str | None = None
    sort: SortKey | None = None
    descending: bool = False
    limit: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        if self.sort is not None and self.sort not in SORT_KEYS:
            raise InvalidInput(f"sort must be one of: {', '.join(SORT_KEYS)}")
        if self.limit is not None and not 1 <= self.limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
        if self.offset < 0:
            raise InvalidInput("offset must be 0 or more")
        if self.name_contains is not None and len(self.name_contains) > MAX_NAME_FILTER:
            raise InvalidInput(f"a name filter is at most {MAX_NAME_FILTER} characters")

    @property
    def needs_names(self) -> bool:
        """Whether applying it reads the documents' names (uploads' are sealed: decrypted)."""
        return bool(self.name_contains) or self.sort == "name"


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """One page of a listing, and how many documents match in all."""

    documents: list[DocumentRecord]
    total: int


def page_of(
    records: Sequence[DocumentRecord],
    listing: DocumentListing,
    name_of: Callable[[DocumentRecord], str],
) -> DocumentPage:
    """The page ``listing`` asks for of ``records`` (already in ``listing.state``). Names are
    read (``name_of``) only when the filter or the order needs them. Pure but for
    ``name_of``; ties sort by id, so pages never overlap."""
    names = {d.id: name_of(d) for d in records} if listing.needs_names else {}
    found = list(records)
    if listing.name_contains:
        needle = listing.name_contains.casefold()
        found = [d for d in found if needle in names[d.id].casefold()]
    if listing.sort is not None:
        found.sort(key=_sort_key(listing.sort, names), reverse=listing.descending)
    end = None if listing.limit is None else listing.offset + listing.limit
    return DocumentPage(found[listing.offset : end], len(found))


def _sort_key(sort: str, names: dict[str, str]) -> Callable[[DocumentRecord], tuple[Any, str]]:
    if sort == "name":
        return lambda d: (names[d.id].casefold(), d.id)
    field = _FIELDS[sort]
    return lambda d: (getattr(d, field), d.id)
