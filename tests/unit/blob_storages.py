"""The blob storages the blob tests run against, each with raw access to what it stores (to
tamper with, age or list it, as an attacker or a crash would). A new storage is one more entry
in ``STORAGES``."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

import pytest

from lorebase.vault.storage import BlobStorage, FileBlobStorage


class RawStorage(Protocol):
    storage: BlobStorage
    default: BlobStorage
    """The same place with the storage's production settings (part sizes)."""

    def read(self, blob_id: str) -> bytes:
        """The stored (encrypted) bytes."""

    def write(self, blob_id: str, data: bytes) -> None:
        """Store these bytes as they are, bypassing the blob store."""

    def names(self) -> set[str]:
        """Everything stored: blobs and any leftovers (temporary or foreign files)."""

    def age(self, blob_id: str, seconds: float = 7200) -> None:
        """Make a stored blob look ``seconds`` older."""


class RawFiles:
    storage: BlobStorage
    default: BlobStorage

    def __init__(self, root: Path) -> None:
        self.storage = self.default = FileBlobStorage(root)
        self.root = root

    def read(self, blob_id: str) -> bytes:
        return (self.root / blob_id).read_bytes()

    def write(self, blob_id: str, data: bytes) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / blob_id).write_bytes(data)

    def names(self) -> set[str]:
        return {p.name for p in self.root.iterdir()} if self.root.is_dir() else set()

    def age(self, blob_id: str, seconds: float = 7200) -> None:
        path = self.root / blob_id
        stamp = path.stat().st_mtime - seconds
        os.utime(path, (stamp, stamp))


class RawRows:
    storage: BlobStorage
    default: BlobStorage

    def __init__(self, storage: BlobStorage) -> None:
        from lorebase.vault.postgres_storage import PostgresBlobStorage

        assert isinstance(storage, PostgresBlobStorage)
        self.storage = storage
        self.default = PostgresBlobStorage(storage.database)
        self._db = storage.database

    def read(self, blob_id: str) -> bytes:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT data FROM blobs WHERE id = %s ORDER BY part", (blob_id,)
            ).fetchall()
        return b"".join(bytes(row[0]) for row in rows)

    def write(self, blob_id: str, data: bytes) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM blobs WHERE id = %s", (blob_id,))
            conn.execute(
                "INSERT INTO blobs (id, part, data, version) VALUES (%s, 0, %s, %s)",
                (blob_id, data, secrets.randbits(63)),
            )

    def names(self) -> set[str]:
        with self._db.read() as conn:
            return {row[0] for row in conn.execute("SELECT DISTINCT id FROM blobs")}

    def age(self, blob_id: str, seconds: float = 7200) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE blobs SET updated_at = updated_at - make_interval(secs => %s) "
                "WHERE id = %s",
                (seconds, blob_id),
            )


@contextmanager
def _files(request: pytest.FixtureRequest) -> Iterator[RawStorage]:
    yield RawFiles(request.getfixturevalue("tmp_path") / "blobs")


@contextmanager
def _postgres(request: pytest.FixtureRequest, part_bytes: int) -> Iterator[RawStorage]:
    from lorebase.store.postgres.database import PostgresDatabase
    from lorebase.vault.postgres_storage import PostgresBlobStorage

    database = PostgresDatabase(request.getfixturevalue("postgres_url"))
    try:
        yield RawRows(PostgresBlobStorage(database, part_bytes=part_bytes))
    finally:
        database.close()


STORAGES: dict[str, Callable[[pytest.FixtureRequest], AbstractContextManager[RawStorage]]] = {
    "files": _files,
    # Parts smaller than the test's records, so that a blob spans many rows.
    "postgres": lambda request: _postgres(request, part_bytes=40),
}
