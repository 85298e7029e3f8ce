"""The application service: every use case lorebase offers, whatever the surface.

:class:`Lorebase` is the one object the CLI, the REST routes, MCP and the agent tools call;
they parse input, call one method and render the result, and never reach the store. It is a
facade composed of small use-case objects, one module each (:mod:`lorebase.service.core` lists
them). The values it hands out (knowledge bases, documents, states, scopes, callers) are
re-exported here so a surface needs no import from below this layer.
"""

from lorebase.accounts.access import Caller
from lorebase.service.core import LOCAL_USER, Lorebase
from lorebase.store.base import (
    DocumentRecord,
    DocumentState,
    KbState,
    KnowledgeBase,
    Scope,
    Source,
    SourceKind,
    StoredChunk,
)

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
