"""Accounts in SQLite: their own tables and migrations (``schema.py``), over a
:class:`SqliteDatabase` they are given (the store's, to share its file, connections and
write lock) or open themselves. Everything else is :mod:`lorebase.accounts.relational`."""

from __future__ import annotations

from pathlib import Path

from lorebase.accounts.common import key_hash
from lorebase.accounts.relational import HasDatabase, RelationalAccounts
from lorebase.accounts.schema import migrate_accounts
from lorebase.store.sqlite.database import SqliteDatabase

__all__ = ["HasDatabase", "SqliteAccounts", "key_hash"]


class SqliteAccounts(RelationalAccounts[SqliteDatabase]):
    """:class:`AccountStore` over SQLite. ``SqliteAccounts(store)`` shares the store's database
    (its file, connections and write lock; closing the store closes it);
    ``SqliteAccounts.open(path)`` opens a database of its own, closed by :meth:`close`. Either
    way the account migrations are applied first."""

    def _migrate(self) -> None:
        with self._db.schema() as conn:
            migrate_accounts(conn)

    @classmethod
    def open(cls, path: Path | str) -> SqliteAccounts:
        return cls._owning(SqliteDatabase(path))
