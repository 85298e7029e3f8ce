"""The documents of the chunks searches collapsed lately, kept across searches.

A stored chunk's id names its document for good (:func:`lorebase.store.stored_chunk_id`
hashes the document's id into it), so what a store once said of a chunk's document stays
true: a later search asks the store only about the chunks new to this process. The
candidates of a base's searches repeat (its often-answering passages): on 300 questions of a
base of 6,930 chunks most of a search's ~190 candidates were known by its hundredth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

KNOWN_CHUNKS = 50_000
"""About 10 MB: a chunk's id and its slot (its document's id is shared)."""


class KnownDocuments:
    """The document of each chunk looked up lately: at most ``size`` chunks, forgotten all
    at once when full (a search's candidates are asked again as they come). Safe to share
    between threads: a lookup reads one dictionary, a filling replaces or extends it."""

    def __init__(self, size: int | None = None) -> None:
        self.size = KNOWN_CHUNKS if size is None else size
        self._known: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._known)

    def of(
        self, chunk_ids: Sequence[str], ask: Callable[[list[str]], dict[str, str]]
    ) -> dict[str, str]:
        """The document of each of ``chunk_ids`` that has one: from memory, the rest from
        ``ask`` (the store: it leaves out chunks it does not hold, which are not kept)."""
        known = self._known
        found: dict[str, str] = {}
        rest: list[str] = []
        for chunk_id in chunk_ids:
            document = known.get(chunk_id)
            if document is None:
                rest.append(chunk_id)
            else:
                found[chunk_id] = document
        if not rest:
            return found
        fresh = ask(rest)
        found.update(fresh)
        if len(known) + len(fresh) > self.size:
            known = self._known = {}
        if len(fresh) <= self.size:
            known.update(fresh)
        return found
