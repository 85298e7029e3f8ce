"""The encrypted blob store and the data key: round trips, tamper evidence, key handling,
hostile ids, sweeping and rotation. Every blob test runs on every storage (``STORAGES``: files
in a folder, rows in PostgreSQL); a few check what only files have (modes, temporary files)."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path

import pytest

from lorebase.errors import (
    WRONG_KEY_MESSAGE,
    DamagedBlob,
    InvalidInput,
    NotFound,
    RotationIncomplete,
    ServerFault,
    Unsupported,
    WrongKey,
)
from lorebase.vault.blobs import HEADER_BYTES, BlobStore, check_blob_id
from lorebase.vault.keys import (
    KEY_ENV,
    KEY_FILE,
    NONCE_BYTES,
    TAG_BYTES,
    DataKey,
    open_text,
    seal_text,
)
from lorebase.vault.storage import BlobStorage
from unit.blob_storages import STORAGES, RawFiles, RawStorage

CHUNK = 16  # small chunks make multi-chunk blobs cheap
RECORD = NONCE_BYTES + CHUNK + TAG_BYTES
A = "a" * 16
B = "b" * 16
C = "c" * 32


@pytest.fixture
def key() -> DataKey:
    return DataKey.generate()


@pytest.fixture(params=sorted(STORAGES))
def raw(request: pytest.FixtureRequest) -> Iterator[RawStorage]:
    with STORAGES[request.param](request) as opened:
        yield opened


@pytest.fixture
def store(raw: RawStorage, key: DataKey) -> BlobStore:
    return BlobStore(raw.storage, key, chunk_size=CHUNK)


@pytest.fixture
def files(tmp_path: Path) -> RawFiles:
    """Files only: for what only a folder has (modes, temporary and foreign files)."""
    return RawFiles(tmp_path / "blobs")


def flip(raw: RawStorage, blob_id: str, offset: int) -> None:
    data = bytearray(raw.read(blob_id))
    data[offset] ^= 0x01
    raw.write(blob_id, bytes(data))


def other_store(storage: BlobStorage, key: DataKey | None = None) -> BlobStore:
    """Another blob store over the same storage (another key, another process)."""
    return BlobStore(storage, key or DataKey.generate(), chunk_size=CHUNK)


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"x", b"hello world", bytes(range(CHUNK)), bytes(range(256)) * 3 + b"tail"],
    ids=["empty", "one-byte", "small", "exactly-one-chunk", "multi-chunk"],
)
def test_round_trip(store: BlobStore, data: bytes) -> None:
    assert store.put(A, data) == len(data)
    assert store.get(A) == data
    assert b"".join(store.stream(A)) == data


def test_round_trip_from_an_iterator_of_odd_pieces(store: BlobStore) -> None:
    data = os.urandom(CHUNK * 5 + 3)

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(data), 7):
            yield data[start : start + 7]
        yield b""

    assert store.put(A, pieces()) == len(data)
    assert store.get(A) == data
    assert all(len(chunk) == CHUNK for chunk in list(store.stream(A))[:-1])


def test_default_chunk_size_round_trip(raw: RawStorage, key: DataKey) -> None:
    store = BlobStore(raw.default, key)
    data = os.urandom(2 * 1024 * 1024 + 5)  # three 1 MiB chunks
    store.put(A, [data[:100], data[100:]])
    assert store.get(A) == data


def test_layout_is_header_plus_one_record_per_chunk(
    store: BlobStore, raw: RawStorage, key: DataKey
) -> None:
    """Every storage keeps the very bytes of the file format."""
    store.put(A, b"z" * (CHUNK * 2 + 1))
    stored = raw.read(A)
    assert stored.startswith(b"LOREBLOB\x01" + key.id_bytes)
    assert len(stored) == HEADER_BYTES + 2 * RECORD + (NONCE_BYTES + 1 + TAG_BYTES)
    assert store.key_id_of(A) == key.id


def test_storage_holds_neither_plaintext_nor_display_name(
    store: BlobStore, raw: RawStorage, key: DataKey
) -> None:
    secret = b"quarterly salary figures: alice 123456 " * 4
    name = "salaries-2024-confidential.xlsx"
    store.put(A, secret)
    sealed = seal_text(key, name, context=f"upload-name:{A}")
    assert raw.names() == {A}
    stored = raw.read(A)
    assert b"salary" not in stored and b"alice" not in stored
    assert name.encode() not in stored and b"salaries" not in stored
    assert name not in sealed and "salaries" not in sealed
    assert open_text(key, sealed, context=f"upload-name:{A}") == name


def test_files_and_folder_are_private(files: RawFiles, key: DataKey) -> None:
    BlobStore(files.storage, key).put(A, b"data")
    assert stat.S_IMODE((files.root / A).stat().st_mode) == 0o600
    assert stat.S_IMODE(files.root.stat().st_mode) & 0o077 == 0


def test_put_replaces_and_leaves_no_temp_files(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, b"first")
    store.put(A, b"second")
    assert store.get(A) == b"second"
    assert raw.names() == {A}


def test_failed_put_keeps_the_old_blob_and_no_temp(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, b"old")

    def broken() -> Iterator[bytes]:
        yield b"x" * (CHUNK * 3)
        raise OSError("upload interrupted")

    with pytest.raises(OSError, match="interrupted"):
        store.put(A, broken())
    assert store.get(A) == b"old"
    assert raw.names() == {A}
    with pytest.raises(OSError, match="interrupted"):
        store.put(B, broken())  # a new blob cut short is not there at all
    assert not store.exists(B) and raw.names() == {A}


def test_non_bytes_data_is_rejected(store: BlobStore) -> None:
    with pytest.raises(InvalidInput, match="bytes"):
        store.put(A, ["text, not bytes"])  # type: ignore[list-item]
    assert store.ids() == set()


def test_missing_blob(store: BlobStore) -> None:
    with pytest.raises(NotFound):
        store.get(A)
    assert not store.exists(A)
    assert store.delete(A) is False


def test_exists_delete_ids(store: BlobStore) -> None:
    assert store.ids() == set()
    store.put(A, b"1")
    store.put(C, b"2")
    assert store.ids() == {A, C}
    assert store.exists(A)
    assert store.delete(A) is True
    assert not store.exists(A)
    assert store.ids() == {C}


# -- tampering -------------------------------------------------------------------------------


def test_foreign_files_are_not_blobs(files: RawFiles, key: DataKey) -> None:
    store = BlobStore(files.storage, key)
    store.put(A, b"1")
    (files.root / "README").write_text("not a blob")
    assert store.ids() == {A} == BlobStore.stored_ids(files.root)


def damaged(store: BlobStore, raw: RawStorage, blob_id: str, before: bytes) -> None:
    """Reading fails as damage, and the stored blob is kept exactly as it was."""
    with pytest.raises(DamagedBlob, match=f"blob {blob_id} is damaged"):
        store.get(blob_id)
    assert raw.read(blob_id) == before


@pytest.mark.parametrize(
    "offset",
    [HEADER_BYTES + NONCE_BYTES + 2, HEADER_BYTES, -1, HEADER_BYTES + RECORD + 5, 15],
    ids=["ciphertext", "nonce", "last-tag", "second-chunk", "chunk-size-in-header"],
)
def test_flipped_byte_is_detected(store: BlobStore, raw: RawStorage, offset: int) -> None:
    store.put(A, os.urandom(CHUNK * 3 + 4))
    flip(raw, A, offset)
    damaged(store, raw, A, raw.read(A))


@pytest.mark.parametrize("records", [1, 2, 3], ids=["to-one-chunk", "to-two", "to-three"])
def test_truncation_at_a_chunk_boundary_is_detected(
    store: BlobStore, raw: RawStorage, records: int
) -> None:
    store.put(A, os.urandom(CHUNK * 3 + 4))
    raw.write(A, raw.read(A)[: HEADER_BYTES + records * RECORD])
    damaged(store, raw, A, raw.read(A))


@pytest.mark.parametrize("keep", [0, 5, HEADER_BYTES, HEADER_BYTES + 20], ids=str)
def test_truncation_elsewhere_is_detected(store: BlobStore, raw: RawStorage, keep: int) -> None:
    store.put(A, b"some data")
    raw.write(A, raw.read(A)[:keep])
    damaged(store, raw, A, raw.read(A))


def test_appended_chunk_is_detected(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, b"x" * CHUNK)
    stored = raw.read(A)
    raw.write(A, stored + stored[HEADER_BYTES:])
    damaged(store, raw, A, raw.read(A))


def test_swapped_chunks_are_detected(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, os.urandom(CHUNK * 3))
    stored = raw.read(A)
    first = stored[HEADER_BYTES : HEADER_BYTES + RECORD]
    second = stored[HEADER_BYTES + RECORD : HEADER_BYTES + 2 * RECORD]
    raw.write(A, stored[:HEADER_BYTES] + second + first + stored[HEADER_BYTES + 2 * RECORD :])
    damaged(store, raw, A, raw.read(A))


def test_swapped_blobs_are_detected(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, b"alpha's document")
    store.put(B, b"bravo's document")
    a, b = raw.read(A), raw.read(B)
    raw.write(A, b)
    raw.write(B, a)
    damaged(store, raw, A, b)
    damaged(store, raw, B, a)


def test_streaming_reports_damage_too(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, os.urandom(CHUNK * 3))
    raw.write(A, raw.read(A)[: HEADER_BYTES + 2 * RECORD])
    with pytest.raises(DamagedBlob):
        list(store.stream(A))


def test_not_a_blob_and_future_version(store: BlobStore, raw: RawStorage) -> None:
    raw.write(A, b"just some file that is long enough")
    damaged(store, raw, A, raw.read(A))
    store.put(B, b"data")
    flip(raw, B, 8)  # version 1 -> 0
    with pytest.raises(Unsupported, match="upgrade lorebase"):
        store.get(B)


# -- wrong key -------------------------------------------------------------------------------


def test_wrong_key_is_reported_and_the_blob_kept(store: BlobStore, raw: RawStorage) -> None:
    store.put(A, b"secret")
    before = raw.read(A)
    other = other_store(raw.storage)
    with pytest.raises(WrongKey) as caught:
        other.get(A)
    assert str(caught.value).startswith(WRONG_KEY_MESSAGE)
    assert "set LOREBASE_DATA_KEY to the right key" in str(caught.value)
    assert store.key.id in str(caught.value)
    assert isinstance(caught.value, ServerFault)  # the server's key is at fault, not the request
    with pytest.raises(WrongKey):
        other.stream(A)
    assert raw.read(A) == before
    assert store.get(A) == b"secret"


def test_key_never_appears_in_repr_or_errors(key: DataKey) -> None:
    assert repr(key) == f"DataKey(id={key.id})"
    assert key.to_base64() not in repr(key)
    assert len(key.id) == 8


# -- key loading -----------------------------------------------------------------------------


def test_key_file_is_created_0600_and_reused(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # even a permissive umask must not widen the mode
    try:
        first = DataKey.load(tmp_path)
    finally:
        os.umask(old_umask)
    path = tmp_path / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert DataKey.load(tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE]  # no temp file left


def test_key_file_is_created_in_a_new_data_dir(tmp_path: Path) -> None:
    key = DataKey.load(tmp_path / "new" / "home")
    assert (tmp_path / "new" / "home" / KEY_FILE).is_file()
    assert DataKey.from_file(tmp_path / "new" / "home" / KEY_FILE) == key


def test_env_key_takes_precedence_and_creates_no_file(tmp_path: Path) -> None:
    env_key = DataKey.generate()
    loaded = DataKey.load(tmp_path, env_key.to_base64())
    assert loaded == env_key
    assert not (tmp_path / KEY_FILE).exists()
    file_key = DataKey.load(tmp_path)
    assert DataKey.load(tmp_path, env_key.to_base64()) == env_key != file_key


def test_env_key_accepts_urlsafe_base64_without_padding(tmp_path: Path) -> None:
    key = DataKey.generate()
    text = base64.urlsafe_b64encode(key._secret).decode().rstrip("=")
    assert DataKey.load(tmp_path, f" {text}\n") == key


@pytest.mark.parametrize(
    "value",
    ["not base64!!", base64.b64encode(b"short").decode(), base64.b64encode(b"x" * 48).decode()],
    ids=["not-base64", "too-short", "too-long"],
)
def test_bad_env_key_says_what_is_expected(tmp_path: Path, value: str) -> None:
    with pytest.raises(InvalidInput, match="base64 of exactly 32 random bytes") as caught:
        DataKey.load(tmp_path, value)
    assert KEY_ENV in str(caught.value)
    assert value not in str(caught.value)
    assert not (tmp_path / KEY_FILE).exists()


def test_empty_env_key_falls_back_to_the_file(tmp_path: Path) -> None:
    key = DataKey.load(tmp_path, "")
    assert (tmp_path / KEY_FILE).is_file()
    assert DataKey.load(tmp_path) == key


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_loose_key_file_permissions_are_refused(tmp_path: Path, mode: int) -> None:
    DataKey.load(tmp_path)
    path = tmp_path / KEY_FILE
    path.chmod(mode)
    with pytest.raises(InvalidInput, match=r"chmod 600") as caught:
        DataKey.load(tmp_path)
    assert str(path) in str(caught.value)
    assert stat.S_IMODE(path.stat().st_mode) == mode  # refused, not silently changed


def test_malformed_key_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"garbage")
    os.close(fd)
    with pytest.raises(InvalidInput, match="key file"):
        DataKey.load(tmp_path)
    assert path.read_bytes() == b"garbage"


def test_symlinked_key_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.key"
    DataKey.generate().save(real)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / KEY_FILE).symlink_to(real)
    with pytest.raises(InvalidInput, match="cannot be opened"):
        DataKey.load(tmp_path / "home")


def test_save_never_overwrites(tmp_path: Path) -> None:
    first = DataKey.load(tmp_path)
    from lorebase.errors import Conflict

    with pytest.raises(Conflict, match="already exists"):
        DataKey.generate().save(tmp_path / KEY_FILE)
    assert DataKey.load(tmp_path) == first


def test_raw_key_of_wrong_length() -> None:
    with pytest.raises(InvalidInput, match="32 bytes"):
        DataKey(b"x" * 16)


# -- blob ids --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "blob_id",
    [
        "../x",
        "a/b",
        "",
        "A" * 16,
        "ab" * 8 + "/",
        "../" + "a" * 16,
        "a" * 65,
        "a" * 15,
        "a" * 16 + "\n",
        "g" * 16,
        "." + "a" * 16,
        "/" + "a" * 16,
        None,
        123,
    ],
    ids=repr,
)
def test_hostile_ids_are_rejected(store: BlobStore, blob_id: object) -> None:
    with pytest.raises(InvalidInput, match="16 to 64 lowercase hexadecimal"):
        check_blob_id(blob_id)  # type: ignore[arg-type]
    for call in (store.get, store.exists, store.delete, store.stream, store.key_id_of):
        with pytest.raises(InvalidInput):
            call(blob_id)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.put(blob_id, b"x")  # type: ignore[arg-type]
    for storage_call in (store.storage.open, store.storage.exists, store.storage.delete):
        with pytest.raises(InvalidInput):  # the storage checks too
            storage_call(blob_id)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.storage.write(blob_id, [b"x"])  # type: ignore[arg-type]
    assert store.ids() == set()


def test_longest_id_is_accepted(store: BlobStore) -> None:
    blob_id = "0123456789abcdef" * 4
    store.put(blob_id, b"ok")
    assert store.ids() == {blob_id}


# -- sweeping --------------------------------------------------------------------------------


def test_sweep_orphans_removes_unkept_blobs(store: BlobStore, raw: RawStorage) -> None:
    for blob_id in (A, B, C):
        store.put(blob_id, b"data")
        raw.age(blob_id)
    assert store.sweep_orphans(keep={A}) == 2
    assert store.ids() == {A} and raw.names() == {A}
    assert store.get(A) == b"data"
    assert store.sweep_orphans(keep={A}) == 0


def test_sweep_orphans_removes_unkept_blobs_and_stale_temps(files: RawFiles, key: DataKey) -> None:
    store = BlobStore(files.storage, key)
    for blob_id in (A, B, C):
        store.put(blob_id, b"data")
        files.age(blob_id)
    stale = files.root / f".{A}.{'0' * 16}.tmp"
    fresh = files.root / f".{B}.{'1' * 16}.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    files.age(stale.name)
    other = files.root / "notes.txt"
    other.write_text("not ours")
    files.age(other.name)

    assert store.sweep_orphans(keep={A}) == 3  # B, C and the stale temp file
    assert store.ids() == {A}
    assert fresh.exists() and other.exists() and not stale.exists()
    assert store.get(A) == b"data"
    assert store.sweep_orphans(keep={A}) == 0


def test_sweep_spares_young_blobs_of_uploads_in_flight(store: BlobStore) -> None:
    store.put(A, b"just uploaded")
    assert store.sweep_orphans(keep=set()) == 0
    assert store.sweep_orphans(keep=set(), grace=-1) == 1
    assert store.ids() == set()


def test_sweep_of_a_missing_folder(tmp_path: Path, key: DataKey) -> None:
    assert BlobStore(tmp_path / "none", key).sweep_orphans(set()) == 0


def test_sweep_of_an_empty_storage(store: BlobStore) -> None:
    assert store.sweep_orphans(set(), grace=-1) == 0


# -- rotation --------------------------------------------------------------------------------


def fill(store: BlobStore) -> dict[str, bytes]:
    blobs = {f"{n:016x}": os.urandom(n * 7) for n in range(6)}
    for blob_id, data in blobs.items():
        store.put(blob_id, data)
    return blobs


def test_rotate_reencrypts_everything(store: BlobStore, raw: RawStorage, key: DataKey) -> None:
    blobs = fill(store)
    new = DataKey.generate()
    assert store.rotate(new) == len(blobs)
    assert store.key == new
    fresh = other_store(raw.storage, new)
    stale = other_store(raw.storage, key)
    for blob_id, data in blobs.items():
        assert fresh.get(blob_id) == data
        assert fresh.key_id_of(blob_id) == new.id
        with pytest.raises(WrongKey):
            stale.get(blob_id)
    assert store.ids() == set(blobs)  # no temp files left
    assert raw.names() == set(blobs)


def test_rotate_is_idempotent(store: BlobStore, raw: RawStorage) -> None:
    blobs = fill(store)
    new = DataKey.generate()
    assert store.rotate(new) == len(blobs)
    before = {blob_id: raw.read(blob_id) for blob_id in blobs}
    assert store.rotate(new) == 0
    assert {blob_id: raw.read(blob_id) for blob_id in blobs} == before


def test_interrupted_rotation_reads_both_and_completes_on_rerun(
    store: BlobStore, raw: RawStorage, key: DataKey
) -> None:
    blobs = fill(store)
    new = DataKey.generate()
    done = sorted(blobs)[:2]
    for blob_id in done:  # a rotation that crashed after two blobs
        assert store._rotate_one(blob_id, new)

    mixed = BlobStore(raw.storage, new, previous=[key], chunk_size=CHUNK)
    assert all(mixed.get(blob_id) == data for blob_id, data in blobs.items())
    assert {store.key_id_of(b) for b in done} == {new.id}

    restarted = other_store(raw.storage, key)  # still configured with the old key
    assert restarted.rotate(new) == len(blobs) - len(done)
    only_new = other_store(raw.storage, new)
    assert all(only_new.get(blob_id) == data for blob_id, data in blobs.items())


def test_rotation_writes_new_uploads_with_the_new_key(store: BlobStore, key: DataKey) -> None:
    store.put(A, b"before")
    new = DataKey.generate()
    store.rotate(new)
    store.put(B, b"after")
    assert store.key_id_of(B) == new.id
    assert store.keys == (new, key)


def test_rotation_leaves_damaged_and_foreign_blobs_untouched(
    store: BlobStore, raw: RawStorage
) -> None:
    blobs = fill(store)
    ids = sorted(blobs)
    flip(raw, ids[1], -1)
    other_store(raw.storage).put(ids[3], b"foreign")
    kept = {i: raw.read(i) for i in (ids[1], ids[3])}
    new = DataKey.generate()

    with pytest.raises(RotationIncomplete) as caught:
        store.rotate(new)
    assert caught.value.rotated == len(blobs) - 2
    assert isinstance(caught.value.failed[ids[1]], DamagedBlob)
    assert isinstance(caught.value.failed[ids[3]], WrongKey)
    assert {i: raw.read(i) for i in (ids[1], ids[3])} == kept
    assert raw.names() == set(blobs)
    for blob_id in (ids[0], ids[2], ids[4], ids[5]):
        assert store.get(blob_id) == blobs[blob_id]


def test_rotation_does_not_clobber_a_concurrent_put(
    store: BlobStore, raw: RawStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer replaces the blob after the rotation read it and before its re-encrypted
    copy lands: that write wins, whatever the storage."""
    store.put(A, b"old content")
    new = DataKey.generate()
    storage = raw.storage
    real_write = storage.write

    def race_then_write(
        blob_id: str, parts: Iterable[bytes], *, replacing: Hashable | None = None
    ) -> bool:
        if replacing is not None:  # the rotation's write: another process wins the race
            other_store(storage, new).put(A, b"newer content")  # (not a rotation's write)
        return real_write(blob_id, parts, replacing=replacing)

    monkeypatch.setattr(storage, "write", race_then_write)
    assert store.rotate(new) == 0
    monkeypatch.undo()
    assert store.get(A) == b"newer content"
    assert store.ids() == {A} and raw.names() == {A}


# -- sealed names ----------------------------------------------------------------------------


def test_seal_and_open_text(key: DataKey) -> None:
    for text in ("", "report.pdf", "Überblick – 日本語.docx", "x" * 2000):
        token = seal_text(key, text, "upload-name:1")
        assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        assert open_text(key, token, "upload-name:1") == text
    assert seal_text(key, "same", "c") != seal_text(key, "same", "c")  # random nonce


def test_sealed_text_in_the_wrong_context_fails(key: DataKey) -> None:
    token = seal_text(key, "report.pdf", "upload-name:1")
    with pytest.raises(InvalidInput, match="does not open in this context"):
        open_text(key, token, "upload-name:2")


def test_sealed_text_with_the_wrong_key(key: DataKey) -> None:
    token = seal_text(key, "report.pdf", "ctx")
    other = DataKey.generate()
    with pytest.raises(WrongKey, match="set LOREBASE_DATA_KEY"):
        open_text(other, token, "ctx")
    assert open_text([other, key], token, "ctx") == "report.pdf"


@pytest.mark.parametrize("token", ["", "!!!", "AQ", "A" * 30])
def test_malformed_tokens(key: DataKey, token: str) -> None:
    with pytest.raises(InvalidInput):
        open_text(key, token, "ctx")


def test_tampered_token(key: DataKey) -> None:
    token = seal_text(key, "report.pdf", "ctx")
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[-1] ^= 1
    bad = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    with pytest.raises(InvalidInput, match="damaged"):
        open_text(key, bad, "ctx")


def test_a_missing_key_file_is_made_only_when_asked(tmp_path: Path) -> None:
    """Where something is already sealed, a new key would lose it: refused, nothing made."""
    from lorebase.errors import ServerFault
    from lorebase.vault.rotation import rotate_data_key

    with pytest.raises(ServerFault, match="missing"):
        DataKey.load(tmp_path, create=False)
    assert not (tmp_path / KEY_FILE).exists()
    with pytest.raises(ServerFault, match="restore"):  # a rotation starts from a key too
        rotate_data_key(tmp_path, store=None)  # type: ignore[arg-type]
    assert not (tmp_path / KEY_FILE).exists()
    made = DataKey.load(tmp_path)
    assert DataKey.load(tmp_path, create=False) == made
