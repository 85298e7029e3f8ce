"""Encrypted blobs kept in PostgreSQL (the table ``blobs``), for lorebase processes on many
machines sharing one database: the same encrypted bytes a file would hold (``blobs.py`` does
all the cryptography), cut into rows of at most ``PART_BYTES``.

- A write is one transaction: it deletes the old rows and inserts the new ones, so readers see
  the old blob or the new one, never a mix, and a write that fails or a process that dies
  leaves nothing behind. Writers of one blob id take turns on a transaction-level advisory
  lock (the last one wins, as a file rename would). Memory stays bounded: a part is inserted
  as soon as it is full.
- A reader holds one repeatable-read snapshot while it reads, fetching one part at a time, so
  a blob replaced or deleted meanwhile is still read whole, as it was.
- ``version`` is random per write: key rotation replaces a blob only if no one wrote it since
  it was read (checked under the same advisory lock).
- ``updated_at`` (the server's clock, so machines never disagree) dates each write for the
  orphan sweep's grace period.

The table has its own numbered migrations, recorded in ``blob_migrations`` and applied under an
advisory lock of their own (``store.postgres.migrator``).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Hashable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from lorebase.errors import Conflict, NotFound
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.migrator import PgMigration, lock_key, migrate
from lorebase.vault.storage import OpenBlob, check_blob_id

BLOB_MIGRATIONS_TABLE = "blob_migrations"
PART_BYTES = 1024 * 1024
ROTATION_LOCK = lock_key("blob-rotation")
"""The session-level advisory lock a key rotation holds from start to end."""
WRITE_LOCK_CLASS = lock_key("blob-writes") >> 32
"""The first key of the two-key advisory lock a blob's writers take (the second: the hash of
its id); the two-key lock space never meets the one-key space of the migration locks."""

BLOB_MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(
        1,
        "blobs: encrypted originals in parts",
        (
            """CREATE TABLE blobs (
                id text NOT NULL,
                part integer NOT NULL CHECK (part >= 0),
                data bytea NOT NULL,
                version bigint NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (id, part)
            )""",
            # Ciphertext does not compress: keep it out of line without trying.
            "ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL",
        ),
    ),
)


def _parts(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Re-cut ``pieces`` into parts of ``size`` bytes (the last shorter; at least one part)."""
    pending = bytearray()
    yielded = False
    for piece in pieces:
        pending += piece
        while len(pending) >= size:
            yield bytes(pending[:size])
            del pending[:size]
            yielded = True
    if pending or not yielded:
        yield bytes(pending)


class _OpenRows:
    """A blob's rows read in one snapshot, one part at a time."""

    def __init__(self, stack: ExitStack, conn: Any, blob_id: str, version: int, first: bytes):
        self._stack, self._conn, self._blob_id = stack, conn, blob_id
        self.version: Hashable = version
        self._buffer = bytearray(first)
        self._next = 1
        self._done = False

    def read(self, size: int, /) -> bytes:
        while len(self._buffer) < size and not self._done:
            row = self._conn.execute(
                "SELECT data FROM blobs WHERE id = %s AND part = %s",
                (self._blob_id, self._next),
            ).fetchone()
            if row is None:
                self._done = True
            else:
                self._buffer += row[0]
                self._next += 1
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        return taken

    def close(self) -> None:
        self._stack.close()


class PostgresBlobStorage:
    """A :class:`~lorebase.vault.storage.BlobStorage` in the ``blobs`` table of ``database``
    (a pool shared with the other PostgreSQL roles); applies its migrations first."""

    shared = True  # every lorebase process on every machine that names the database

    def __init__(self, database: PostgresDatabase, *, part_bytes: int = PART_BYTES) -> None:
        if part_bytes < 1:
            raise ValueError("part_bytes must be positive")
        self.database = database
        self.part_bytes = part_bytes
        migrate(database, BLOB_MIGRATIONS, table=BLOB_MIGRATIONS_TABLE)

    def write(
        self, blob_id: str, parts: Iterable[bytes], *, replacing: Hashable | None = None
    ) -> bool:
        check_blob_id(blob_id)
        version = secrets.randbits(63)
        with self.database.write() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (WRITE_LOCK_CLASS, blob_id)
            )
            if replacing is not None:
                row = conn.execute(
                    "SELECT version FROM blobs WHERE id = %s AND part = 0", (blob_id,)
                ).fetchone()
                if row is None or row[0] != replacing:
                    return False  # replaced or deleted meanwhile: that write wins
            conn.execute("DELETE FROM blobs WHERE id = %s", (blob_id,))
            for index, data in enumerate(_parts(parts, self.part_bytes)):
                conn.execute(
                    "INSERT INTO blobs (id, part, data, version) VALUES (%s, %s, %s, %s)",
                    (blob_id, index, data, version),
                )
        return True

    def open(self, blob_id: str) -> OpenBlob:
        check_blob_id(blob_id)
        stack = ExitStack()
        try:
            conn = stack.enter_context(self.database.read())
            row = conn.execute(
                "SELECT version, data FROM blobs WHERE id = %s AND part = 0", (blob_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"blob {blob_id} does not exist")
        except BaseException:
            stack.close()
            raise
        return _OpenRows(stack, conn, blob_id, int(row[0]), bytes(row[1]))

    def exists(self, blob_id: str) -> bool:
        check_blob_id(blob_id)
        with self.database.read() as conn:
            found = conn.execute(
                "SELECT 1 FROM blobs WHERE id = %s AND part = 0", (blob_id,)
            ).fetchone()
        return found is not None

    def delete(self, blob_id: str) -> bool:
        check_blob_id(blob_id)
        with self.database.write() as conn:
            deleted = conn.execute("DELETE FROM blobs WHERE id = %s", (blob_id,)).rowcount
        return bool(deleted)

    def ids(self) -> set[str]:
        with self.database.read() as conn:
            return {str(row[0]) for row in conn.execute("SELECT id FROM blobs WHERE part = 0")}

    def sweep(self, keep: Collection[str], grace: float) -> int:
        """One statement: blobs whose first part is older than ``grace`` seconds by the
        server's clock and whose id is not in ``keep``. A blob being rewritten meanwhile is
        the writer's (its new rows are not seen, its old ones are gone when this looks)."""
        with self.database.write() as conn:
            row = conn.execute(
                "WITH old AS (SELECT id FROM blobs WHERE part = 0 AND NOT (id = ANY(%s::text[])) "
                "AND updated_at <= now() - make_interval(secs => %s)), "
                "gone AS (DELETE FROM blobs WHERE id IN (SELECT id FROM old) RETURNING id) "
                "SELECT count(DISTINCT id) FROM gone",
                (list(keep), float(grace)),
            ).fetchone()
        return int(row[0])

    @contextmanager
    def rotating(self) -> Iterator[None]:
        """Hold the rotation lock (a session-level advisory lock on a connection kept for the
        rotation) so two machines never rotate at once, each to a key of its own."""
        with self.database.connection() as conn:
            taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (ROTATION_LOCK,)).fetchone()
            if not taken[0]:
                raise Conflict(
                    "another lorebase process is rotating the data key of this database; "
                    "let it finish (or run the rotation again there) before starting one here"
                )
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (ROTATION_LOCK,))
