"""The shared store: one PostgreSQL database (with pgvector) holding knowledge bases,
documents, chunks with their full-text lexemes, and half-precision vectors with a partial
HNSW index per embedding identity.

:class:`PostgresStore` is the relational store (:mod:`lorebase.store.relational`: every role
written once) over one :class:`PostgresDatabase` (``database``: the pool and its
transactions), with PostgreSQL full text as its keyword engine; :class:`~.role.PostgresRole`
holds the hooks where PostgreSQL differs. It keeps nothing in memory between calls, so any
number of processes, on any number of machines, may serve and write the same database.
"""

from __future__ import annotations

from lorebase.store.postgres import dense, lexical
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.maintenance import PostgresMaintenance
from lorebase.store.postgres.role import PostgresRole
from lorebase.store.postgres.schema import migrate
from lorebase.store.postgres.search import FullText
from lorebase.store.relational.store import RelationalStore

__all__ = ["PostgresStore"]


class PostgresStore(PostgresRole, PostgresMaintenance, RelationalStore[PostgresDatabase]):
    """:class:`Store` over a PostgreSQL URL or an open :class:`PostgresDatabase` (shared with
    the other PostgreSQL parts of lorebase; a database passed in is not closed by
    :meth:`close`). Safe to share between threads.

    ``ranking`` chooses the keyword ranking (``bm25``, or ``ts_rank_cd`` to measure it);
    ``exact_search_rows`` the number of vectors up to which dense search scans instead of
    using the HNSW index. Both are for tests and benchmarks, not settings. ``owns_database``:
    close the database with the store (default: only a database it opened itself) — how the
    composition root hands the pool of every PostgreSQL part to the store's life."""

    def __init__(
        self,
        url_or_database: str | PostgresDatabase,
        *,
        ranking: lexical.Ranking = lexical.DEFAULT_RANKING,
        exact_search_rows: int = dense.EXACT_MAX_ROWS,
        owns_database: bool | None = None,
    ) -> None:
        self._lexical = FullText(ranking)
        self.exact_search_rows = exact_search_rows
        if isinstance(url_or_database, PostgresDatabase):
            self._db, self._owns_db = url_or_database, bool(owns_database)
        else:
            self._db, self._owns_db = PostgresDatabase(url_or_database), owns_database is not False
        try:
            migrate(self._db)
        except BaseException:
            self.close()
            raise
