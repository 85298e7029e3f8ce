"""The embedded SQLite store (the default backend): ``SqliteStore(path)``.

``SqliteStore`` is imported on first use, so the pure modules of this package (the FTS query
builder, the schema) load without numpy or the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorebase.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]


def __getattr__(name: str) -> Any:
    if name == "SqliteStore":
        from lorebase.store.sqlite.store import SqliteStore

        return SqliteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
