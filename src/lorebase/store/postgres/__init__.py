"""The PostgreSQL + pgvector backend (the ``postgres`` extra): one database shared by every
lorebase process, on any number of machines: ``PostgresStore(url)``.

``PostgresStore`` is imported on first use, so importing this package loads neither psycopg
nor numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorebase.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from lorebase.store.postgres.store import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
