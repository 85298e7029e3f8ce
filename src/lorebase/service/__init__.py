"""The application service: every use case lorebase offers, whatever the surface.

:class:`Lorebase` is the one object the CLI, the REST routes, MCP and the agent tools call;
they parse input, call one method and render the result, and never reach the store. It is a
facade composed of small use-case objects, one module each (:mod:`lorebase.service.core` lists
them). The values it hands out (knowledge bases, documents, states, scopes, callers) are
re-exported here so a surface needs no import from below this layer. :class:`Lorebase` itself
is loaded on first use, so a command line that only parses (``--help``) does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lorebase.accounts.access import Caller
from lorebase.store.states import DocumentState, KbState, Scope, SourceKind

__all__ = [
    "LOCAL_USER",
    "Caller",
    "DocumentRecord",
    "DocumentState",
    "KbState",
    "KnowledgeBase",
    "Lorebase",
    "Scope",
    "Source",
    "SourceKind",
    "StoredChunk",
]

if TYPE_CHECKING:
    from lorebase.service.core import LOCAL_USER, Lorebase
    from lorebase.store.base import DocumentRecord, KnowledgeBase, Source, StoredChunk

_RECORDS = ("DocumentRecord", "KnowledgeBase", "Source", "StoredChunk")


def __getattr__(name: str) -> Any:
    """``Lorebase`` and ``LOCAL_USER`` from :mod:`lorebase.service.core`, and the records from
    :mod:`lorebase.store.base`, on first use (a command line that only parses loads neither)."""
    if name in ("Lorebase", "LOCAL_USER"):
        from lorebase.service import core

        return getattr(core, name)
    if name in _RECORDS:
        from lorebase.store import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
