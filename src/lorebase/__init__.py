"""lorebase: a local-first knowledge base with hybrid retrieval and cited answers.

    import lorebase
    with lorebase.open("~/.lorebase") as lb:
        lb.add([Path("~/notes")], kb="notes")
        for hit in lb.search("vacation policy", kb="notes").hits:
            print(hit.provenance.citation(), hit.snippet)

What a library user needs is importable from here (``lorebase.SearchRequest``,
``lorebase.NotFound``…) and listed in ``__all__``. Each name loads its module on first use,
so ``import lorebase`` stays cheap (no model runtime, no web framework, no numpy).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorebase.accounts.access import Caller
    from lorebase.errors import (
        Conflict,
        ExtractionFailed,
        Forbidden,
        InvalidInput,
        LorebaseError,
        NotFound,
        Overloaded,
        ServerFault,
        Unauthorized,
        Unavailable,
        Unsupported,
    )
    from lorebase.ingest.report import IngestReport
    from lorebase.search.bounds import Mode
    from lorebase.search.query import Explanation, Hit, SearchRequest, SearchResponse
    from lorebase.service.core import Lorebase
    from lorebase.service.listing import DocumentListing, DocumentPage
    from lorebase.settings import ChunkSettings, Settings
    from lorebase.settings.embedders import EmbedderConfig
    from lorebase.store.base import DocumentRecord, KnowledgeBase, Source
    from lorebase.store.states import DocumentState, KbState, Scope, SourceKind
    from lorebase.types import Chunk, ContentKind, Provenance

__version__ = "0.1.0"

_LAZY = {
    # the service and how it is opened
    "Lorebase": "lorebase.service.core",
    "Settings": "lorebase.settings",
    "ChunkSettings": "lorebase.settings",
    "EmbedderConfig": "lorebase.settings.embedders",
    "Caller": "lorebase.accounts.access",
    # searching
    "SearchRequest": "lorebase.search.query",
    "SearchResponse": "lorebase.search.query",
    "Hit": "lorebase.search.query",
    "Mode": "lorebase.search.bounds",
    "Explanation": "lorebase.search.query",
    "Provenance": "lorebase.types",
    "Chunk": "lorebase.types",
    "ContentKind": "lorebase.types",
    # knowledge bases and documents
    "KnowledgeBase": "lorebase.store.base",
    "Scope": "lorebase.store.base",
    "KbState": "lorebase.store.base",
    "Source": "lorebase.store.base",
    "SourceKind": "lorebase.store.base",
    "DocumentRecord": "lorebase.store.base",
    "DocumentState": "lorebase.store.base",
    "DocumentListing": "lorebase.service.listing",
    "DocumentPage": "lorebase.service.listing",
    "IngestReport": "lorebase.ingest.report",
    # errors: catch LorebaseError, or the branch whose meaning you handle
    "LorebaseError": "lorebase.errors",
    "InvalidInput": "lorebase.errors",
    "ExtractionFailed": "lorebase.errors",
    "NotFound": "lorebase.errors",
    "Conflict": "lorebase.errors",
    "Unsupported": "lorebase.errors",
    "Unavailable": "lorebase.errors",
    "Overloaded": "lorebase.errors",
    "Unauthorized": "lorebase.errors",
    "Forbidden": "lorebase.errors",
    "ServerFault": "lorebase.errors",
}

__all__ = [
    "Caller",
    "Chunk",
    "ChunkSettings",
    "Conflict",
    "ContentKind",
    "DocumentListing",
    "DocumentPage",
    "DocumentRecord",
    "DocumentState",
    "EmbedderConfig",
    "Explanation",
    "ExtractionFailed",
    "Forbidden",
    "Hit",
    "IngestReport",
    "InvalidInput",
    "KbState",
    "KnowledgeBase",
    "Lorebase",
    "LorebaseError",
    "Mode",
    "NotFound",
    "Overloaded",
    "Provenance",
    "Scope",
    "SearchRequest",
    "SearchResponse",
    "ServerFault",
    "Settings",
    "Source",
    "SourceKind",
    "Unauthorized",
    "Unavailable",
    "Unsupported",
    "__version__",
    "open",
]


def open(data_dir: Path | str | None = None) -> Lorebase:
    """Open (creating if needed) the lorebase whose data lives in ``data_dir`` (default:
    ``LOREBASE_HOME``, else the user's data folder), with the settings the ``LOREBASE_*``
    environment variables give. Use it in a ``with`` block, or call ``close()``."""
    from lorebase.app import open_lorebase

    return open_lorebase(Path(data_dir).expanduser() if data_dir is not None else None)


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lorebase' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
