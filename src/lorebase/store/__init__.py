"""Persistence: the :class:`Store` seam and its roles (``base.py``) and its backends
(``sqlite/``, later ``postgres/``). Backends are imported from their own modules, never from
here, and the records are loaded on first use: importing this package (as every module under
it does, the pure FTS query builder included) loads neither numpy nor a backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorebase.store.base import (
        DocumentRecord,
        KnowledgeBase,
        NewDocument,
        Scored,
        Store,
        StoredChunk,
    )
    from lorebase.store.states import DocumentState, Scope

__all__ = [
    "DocumentRecord",
    "DocumentState",
    "KnowledgeBase",
    "NewDocument",
    "Scope",
    "Scored",
    "Store",
    "StoredChunk",
    "stored_chunk_id",
]

_FROM_STATES = frozenset({"DocumentState", "Scope"})
_FROM_BASE = frozenset(__all__) - _FROM_STATES - {"stored_chunk_id"}


def __getattr__(name: str) -> Any:
    """The records and the seam, imported from ``base.py`` (the states from ``states.py``)
    when first asked for."""
    if name in _FROM_STATES:
        from lorebase.store import states

        return getattr(states, name)
    if name in _FROM_BASE:
        from lorebase.store import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STORED_CHUNK_ID_HEX_CHARS = 32


def stored_chunk_id(document_id: str, chunk_id: str) -> str:
    """The id a store gives a chunk: the chunker's id qualified by its document.

    The chunker's id depends only on the document's bytes, the chunk settings and the chunk's
    position, so two copies of one file (two paths, or two knowledge bases) yield equal ids.
    Qualifying by the document id (random, and kept when a path is re-indexed) makes stored ids
    unique while keeping them stable across re-syncs of unchanged content. Every backend uses
    this function so ids mean the same thing everywhere.
    """
    import hashlib  # not at import: every module of the store imports this package

    digest = hashlib.sha256(f"{document_id}\x1f{chunk_id}".encode()).hexdigest()
    return digest[:STORED_CHUNK_ID_HEX_CHARS]
