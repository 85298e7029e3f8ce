"""The embedded SQLite store (the default backend): ``SqliteStore(path)``."""

from __future__ import annotations

from lorebase.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
