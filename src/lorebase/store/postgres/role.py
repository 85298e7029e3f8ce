"""What every role of :class:`~lorebase.store.postgres.store.PostgresStore` shares: the
database (its transactions) and the registration of embedding identities. Each role is a
mixin over this base, one module per role (``catalogue``, ``documents``, ``uploads``,
``retrieval``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from lorebase.store.postgres import dense

if TYPE_CHECKING:
    from lorebase.embed.base import EmbedderIdentity
    from lorebase.store.postgres.database import PostgresDatabase
    from lorebase.store.postgres.lexical import Ranking

IDENTITY_LOCK = 0x6C62_6964  # "lbid": registering an identity (and making its index)


class PostgresRole:
    """Set up by the store's ``__init__``; the roles only use them."""

    _db: PostgresDatabase
    _ranking: Ranking
    exact_search_rows: int

    def _write(self) -> AbstractContextManager[Any]:
        """One write transaction (read committed); anything raised inside rolls it back."""
        return self._db.write()

    def _read(self) -> AbstractContextManager[Any]:
        """One read-only snapshot (repeatable read)."""
        return self._db.read()

    def _identity_id(self, identity: EmbedderIdentity) -> int:
        """The id of an identity, registered (with its HNSW index) on first use, in a short
        transaction of its own: the index is made once, before any vector of it is written,
        and no document's transaction waits on it."""
        with self._read() as conn:
            found = lookup_identity(conn, identity)
        if found is not None:
            return found
        with self._registering() as conn:
            found = lookup_identity(conn, identity)
            if found is not None:
                return found
            row = conn.execute(
                "INSERT INTO identities (key, model, digest, transform, dim) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (identity.key, identity.model, identity.digest, identity.transform, identity.dim),
            ).fetchone()
            identity_id = int(row[0])
            index = dense.create_index_sql(identity_id, identity.dim)
            if index is not None:
                conn.execute(index)
            return identity_id

    @contextmanager
    def _registering(self) -> Iterator[Any]:
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (IDENTITY_LOCK,))
            yield conn


def lookup_identity(conn: Any, identity: EmbedderIdentity) -> int | None:
    row = conn.execute("SELECT id FROM identities WHERE key = %s", (identity.key,)).fetchone()
    return None if row is None else int(row[0])
