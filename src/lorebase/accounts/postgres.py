"""Accounts in PostgreSQL: their own tables and migrations (``postgres_schema.py``) in the one
database every lorebase process shares, over a :class:`PostgresDatabase` they are given (the
store's pool) or open themselves. Everything else is :mod:`lorebase.accounts.relational`."""

from __future__ import annotations

from lorebase.accounts.postgres_schema import migrate_accounts
from lorebase.accounts.relational import RelationalAccounts
from lorebase.store.postgres.database import PostgresDatabase


class PostgresAccounts(RelationalAccounts[PostgresDatabase]):
    """:class:`AccountStore` over PostgreSQL. ``PostgresAccounts(database)`` (or a store that
    has ``.database``) shares that pool, closed by its owner; ``PostgresAccounts.open(url)``
    opens a pool of its own, closed by :meth:`close`. Either way the account migrations are
    applied first."""

    def _migrate(self) -> None:
        migrate_accounts(self._db)

    @classmethod
    def open(cls, url: str) -> PostgresAccounts:
        return cls._owning(PostgresDatabase(url))
