"""Blobs in PostgreSQL, shared by many processes: what the storage-independent blob tests
(``test_blobs.py``) cannot show — parts in rows, one snapshot per read, writers of one id
taking turns, processes starting together, the server's clock for the sweep."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lorebase.errors import Conflict, Unsupported
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.postgres.migrator import lock_key
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE, DataKey
from lorebase.vault.postgres_storage import (
    BLOB_MIGRATIONS,
    BLOB_MIGRATIONS_TABLE,
    PostgresBlobStorage,
)
from lorebase.vault.rotation import NEXT_SUFFIX, rotate_data_key

A = "a" * 16
KIB = 1024
WAIT_SECONDS = 30.0


@pytest.fixture
def databases(postgres_url: str) -> Iterator[tuple[PostgresDatabase, PostgresDatabase]]:
    """Two pools on one database: two processes, maybe on two machines."""
    first, second = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def _parts(database: PostgresDatabase, blob_id: str) -> list[int]:
    with database.read() as conn:
        rows = conn.execute(
            "SELECT length(data) FROM blobs WHERE id = %s ORDER BY part", (blob_id,)
        ).fetchall()
    return [int(row[0]) for row in rows]


def test_a_blob_is_kept_in_parts_of_bounded_size(
    databases: tuple[PostgresDatabase, PostgresDatabase],
) -> None:
    database, _ = databases
    store = BlobStore(
        PostgresBlobStorage(database, part_bytes=4 * KIB), DataKey.generate(), chunk_size=KIB
    )
    data = os.urandom(10 * KIB + 5)
    store.put(A, iter([data[: 3 * KIB], data[3 * KIB :]]))
    sizes = _parts(database, A)
    assert len(sizes) == 3 and all(size == 4 * KIB for size in sizes[:-1])
    assert store.get(A) == data
    store.put(A, b"")  # an empty blob still has its header and one sealed chunk
    assert len(_parts(database, A)) == 1 and store.get(A) == b""


def test_blobs_written_by_one_process_are_read_by_another(
    databases: tuple[PostgresDatabase, PostgresDatabase],
) -> None:
    key = DataKey.generate()  # every process has the same key (LOREBASE_DATA_KEY)
    here = BlobStore(PostgresBlobStorage(databases[0]), key)
    there = BlobStore(PostgresBlobStorage(databases[1]), key)
    here.put(A, b"uploaded here")
    assert there.exists(A) and there.get(A) == b"uploaded here"
    assert BlobStore.stored_ids(there.storage) == {A}
    assert BlobStore.stored_key_id(there.storage, A) == key.id
    assert there.delete(A) and not here.exists(A)


def test_a_reader_sees_one_version_while_the_blob_is_replaced(
    databases: tuple[PostgresDatabase, PostgresDatabase],
) -> None:
    key = DataKey.generate()
    reader = BlobStore(PostgresBlobStorage(databases[0], part_bytes=KIB), key, chunk_size=KIB)
    writer = BlobStore(PostgresBlobStorage(databases[1], part_bytes=KIB), key, chunk_size=KIB)
    old, new = os.urandom(8 * KIB), os.urandom(9 * KIB)
    writer.put(A, old)
    chunks = reader.stream(A)
    first = next(chunks)  # the read has begun
    writer.put(A, new)  # replaced meanwhile, then deleted
    writer.delete(A)
    assert first + b"".join(chunks) == old
    assert not reader.exists(A)


def test_writers_of_one_blob_take_turns_and_the_last_wins(
    databases: tuple[PostgresDatabase, PostgresDatabase],
) -> None:
    key = DataKey.generate()
    stores = [BlobStore(PostgresBlobStorage(db), key, chunk_size=KIB) for db in databases]
    barrier = threading.Barrier(8)
    payloads = [bytes([n]) * (5 * KIB) for n in range(8)]

    def put(n: int) -> int:
        barrier.wait(timeout=WAIT_SECONDS)
        return stores[n % 2].put(A, payloads[n])

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(put, range(8))) == [5 * KIB] * 8  # none fails on a duplicate
    assert stores[0].get(A) in payloads
    assert stores[1].ids() == {A}


def test_processes_starting_together_make_the_table_once(postgres_url: str) -> None:
    racers = 6
    barrier = threading.Barrier(racers)
    databases = [PostgresDatabase(postgres_url) for _ in range(racers)]

    def start(database: PostgresDatabase) -> None:
        barrier.wait(timeout=WAIT_SECONDS)
        PostgresBlobStorage(database)

    try:
        with ThreadPoolExecutor(racers) as pool:
            list(pool.map(start, databases))
        with databases[0].read() as conn:
            rows = conn.execute(f"SELECT number FROM {BLOB_MIGRATIONS_TABLE} ORDER BY 1")
            assert [row[0] for row in rows] == [m.number for m in BLOB_MIGRATIONS]
    finally:
        for database in databases:
            database.close()
    assert lock_key(BLOB_MIGRATIONS_TABLE) != lock_key("account_migrations")


def test_the_sweep_goes_by_the_servers_clock(
    databases: tuple[PostgresDatabase, PostgresDatabase], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine whose clock runs ahead must not sweep another's upload in flight."""
    import time

    store = BlobStore(PostgresBlobStorage(databases[0]), DataKey.generate())
    store.put(A, b"just uploaded elsewhere")
    monkeypatch.setattr(time, "time", lambda: 10**10)  # this machine's clock: far ahead
    assert store.sweep_orphans(keep=set()) == 0
    assert store.sweep_orphans(keep=set(), grace=-1) == 1


# -- key rotation ------------------------------------------------------------------------------


class _NoBases:
    """A store without bases: the rotation's display names are not what is tested here."""

    def list_kbs(self) -> list[object]:
        return []


def test_rotation_over_a_shared_storage_needs_the_key_from_the_environment(
    databases: tuple[PostgresDatabase, PostgresDatabase], tmp_path: Path
) -> None:
    storage = PostgresBlobStorage(databases[0])
    key = DataKey.load(tmp_path)  # a key file: this machine's alone
    BlobStore(storage, key).put(A, b"sealed")
    with pytest.raises(Unsupported, match="LOREBASE_DATA_KEY") as caught:
        rotate_data_key(tmp_path, _NoBases(), None, blobs=storage)  # type: ignore[arg-type]
    assert key.to_base64() not in str(caught.value)
    assert BlobStore.stored_key_id(storage, A) == key.id  # nothing was touched
    assert not (tmp_path / (KEY_FILE + NEXT_SUFFIX)).exists()


def test_rotation_over_postgres_reencrypts_every_blob_and_reruns(
    databases: tuple[PostgresDatabase, PostgresDatabase], tmp_path: Path
) -> None:
    old = DataKey.generate()
    here, there = PostgresBlobStorage(databases[0]), PostgresBlobStorage(databases[1])
    blobs = {f"{n:016x}": os.urandom(n * 300) for n in range(5)}
    for blob_id, data in blobs.items():
        BlobStore(there, old).put(blob_id, data)  # uploaded through another machine

    rotation = rotate_data_key(tmp_path, _NoBases(), old.to_base64(), blobs=here)  # type: ignore[arg-type]
    assert (rotation.blobs, rotation.key_file) == (len(blobs), None)
    new = rotation.new_key
    for blob_id, data in blobs.items():  # the other machine, restarted with the new key
        assert BlobStore(there, new).get(blob_id) == data
        assert BlobStore.stored_key_id(there, blob_id) == new.id

    late = "f" * 16  # sealed with the old key by a process that was not stopped in time
    BlobStore(there, old).put(late, b"late upload")
    again = rotate_data_key(tmp_path, _NoBases(), old.to_base64(), blobs=here)  # type: ignore[arg-type]
    assert (again.blobs, again.new_key) == (1, new)  # the same new key, the rest skipped
    assert BlobStore(there, new).get(late) == b"late upload"


def test_two_rotations_never_run_at_once(
    databases: tuple[PostgresDatabase, PostgresDatabase], tmp_path: Path
) -> None:
    key = DataKey.generate()
    here, there = PostgresBlobStorage(databases[0]), PostgresBlobStorage(databases[1])
    BlobStore(here, key).put(A, b"sealed")
    # another machine is rotating
    with there.rotating(), pytest.raises(Conflict, match="rotating the data key"):
        rotate_data_key(tmp_path, _NoBases(), key.to_base64(), blobs=here)  # type: ignore[arg-type]
    assert BlobStore.stored_key_id(here, A) == key.id
    rotate_data_key(tmp_path, _NoBases(), key.to_base64(), blobs=here)  # type: ignore[arg-type]
    assert BlobStore.stored_key_id(here, A) != key.id
