"""Encrypted storage for uploaded originals: the blob format, over a ``BlobStorage`` that keeps
the encrypted bytes (``storage.py``: one file per blob named by the blob id only, or rows in
PostgreSQL). This module does all the cryptography; a storage never sees plaintext or keys.

Why chunks: AES-GCM in ``cryptography`` is one-shot, so a blob is encrypted as independent
chunks of ``chunk_size`` plaintext bytes (1 MiB by default). Writing and reading then hold at
most two chunks in memory, whatever the upload size.

Blob format, version 1 (all integers big-endian)::

    header   magic  b"LOREBLOB"                      8 bytes
             version  1                              1 byte
             key id  first 4 bytes of sha256(key)    4 bytes   (8 hex characters)
             chunk size  plaintext bytes per chunk   4 bytes
    chunks   nonce (12 random bytes) | AES-256-GCM ciphertext | tag (16 bytes), repeated

Every chunk but the last holds exactly ``chunk size`` plaintext bytes; the last holds 1 to
``chunk size`` bytes, or 0 for an empty blob (which still has one chunk, so that "empty" is
authenticated too). Each chunk's associated data is::

    header (17 bytes) | chunk index (8 bytes) | final flag (1 byte: 1 on the last chunk) | blob id

so altering the header, reordering chunks, dropping trailing chunks (the new last chunk was not
sealed as final), appending any, or renaming one blob's file to another's id all fail
authentication. The key id in the header tells a wrong key (``WrongKey``) apart from damage
(``DamagedBlob``); neither ever deletes or rewrites the stored blob.

Every chunk has its own random nonce: with 1 MiB chunks the 2**32-messages-per-key bound for
random nonces is reached only after about 4 PiB under one key.

Writes are atomic in every storage (files: a temporary file renamed over the final name;
PostgreSQL: one transaction), so a crash leaves the old blob or the new one, never a mix.
Rotation (``rotate``) re-encrypts blob by blob the same way; a blob is always wholly under the
old key or wholly under the new one, and rerunning ``rotate`` finishes an interrupted rotation.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag

from lorebase.errors import (
    DamagedBlob,
    InvalidInput,
    LorebaseError,
    NotFound,
    RotationIncomplete,
    Unsupported,
    WrongKey,
)
from lorebase.vault.keys import NONCE_BYTES, TAG_BYTES, DataKey, pick_key
from lorebase.vault.storage import (
    BLOB_ID_PATTERN,
    BlobStorage,
    FileBlobStorage,
    OpenBlob,
    check_blob_id,
)

__all__ = [
    "BLOB_ID_PATTERN",
    "CHUNK_SIZE",
    "HEADER_BYTES",
    "BlobData",
    "BlobStorage",
    "BlobStore",
    "FileBlobStorage",
    "check_blob_id",
]

MAGIC = b"LOREBLOB"
FORMAT_VERSION = 1
HEADER_BYTES = len(MAGIC) + 1 + 4 + 4
CHUNK_SIZE = 1024 * 1024
MAX_CHUNK_SIZE = 16 * 1024 * 1024  # bounds what a reader allocates for a chunk
SWEEP_GRACE_SECONDS = 3600.0
"""Blobs younger than this survive a sweep: an upload in flight has written its blob (or is
writing it) before its record is committed, so it is not in ``keep`` yet."""

BlobData = bytes | bytearray | memoryview | Iterable[bytes]


@dataclass(frozen=True, slots=True)
class _Header:
    raw: bytes
    key_id: str
    chunk_size: int


def _encode_header(key: DataKey, chunk_size: int) -> bytes:
    return MAGIC + bytes([FORMAT_VERSION]) + key.id_bytes + chunk_size.to_bytes(4, "big")


def _chunk_aad(header: bytes, blob_id: str, index: int, final: bool) -> bytes:
    return header + index.to_bytes(8, "big") + (b"\x01" if final else b"\x00") + blob_id.encode()


def _plain_chunks(data: BlobData, size: int) -> Iterator[tuple[bytes, bool]]:
    """Cut ``data`` into ``(chunk, final)`` pairs of ``size`` bytes. A full chunk is yielded
    only once a further byte is known to exist, so the last one is always marked final."""
    pieces: Iterable[bytes | bytearray | memoryview] = (
        [data] if isinstance(data, bytes | bytearray | memoryview) else data
    )
    pending = bytearray()
    for piece in pieces:
        try:
            view = memoryview(piece).cast("B")
        except TypeError:
            raise InvalidInput("blob data must be bytes or an iterator of bytes") from None
        offset = 0
        while len(pending) + len(view) - offset > size:
            take = size - len(pending)
            pending += view[offset : offset + take]
            offset += take
            yield bytes(pending), False
            pending.clear()
        pending += view[offset:]
    yield bytes(pending), True


class _Sealed:
    """The encrypted bytes of one blob, header first then one record per chunk, made as they
    are consumed; ``size`` counts the plaintext sealed so far."""

    def __init__(self, blob_id: str, key: DataKey, data: BlobData, chunk_size: int) -> None:
        self._blob_id, self._key, self._data, self._chunk_size = blob_id, key, data, chunk_size
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        header = _encode_header(self._key, self._chunk_size)
        yield header
        for index, (plain, final) in enumerate(_plain_chunks(self._data, self._chunk_size)):
            nonce = secrets.token_bytes(NONCE_BYTES)
            aad = _chunk_aad(header, self._blob_id, index, final)
            yield nonce + self._key.encrypt(nonce, plain, aad)
            self.size += len(plain)


class BlobStore:
    """Blobs in ``storage`` (a :class:`BlobStorage`, or a folder for :class:`FileBlobStorage`),
    written with ``key``. ``previous`` keys are read too, so blobs still under an old key stay
    readable while a rotation is unfinished."""

    def __init__(
        self,
        storage: BlobStorage | Path,
        key: DataKey,
        previous: Sequence[DataKey] = (),
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
            raise InvalidInput(f"chunk_size must be between 1 and {MAX_CHUNK_SIZE} bytes")
        self.storage: BlobStorage = _storage(storage)
        self.chunk_size = chunk_size
        self._key = key
        self._previous = tuple(k for k in previous if k != key)

    @property
    def key(self) -> DataKey:
        """The key new blobs are written with."""
        return self._key

    @property
    def keys(self) -> tuple[DataKey, ...]:
        """Every key this store reads with, the current one first."""
        return (self._key, *self._previous)

    # -- writing -------------------------------------------------------------------------

    def put(self, blob_id: str, data: BlobData) -> int:
        """Store ``data`` (bytes, or an iterator of bytes for streaming) under ``blob_id``,
        replacing any blob of that id atomically. Returns the plaintext size in bytes."""
        sealed = _Sealed(check_blob_id(blob_id), self._key, data, self.chunk_size)
        self.storage.write(blob_id, sealed)
        return sealed.size

    # -- reading -------------------------------------------------------------------------

    def _open(self, blob_id: str) -> OpenBlob:
        return self.storage.open(check_blob_id(blob_id))

    def _read_header(self, handle: OpenBlob, blob_id: str) -> _Header:
        raw = handle.read(HEADER_BYTES)
        if len(raw) < HEADER_BYTES or not raw.startswith(MAGIC):
            raise DamagedBlob(blob_id, "no lorebase blob header")
        version = raw[len(MAGIC)]
        if version != FORMAT_VERSION:
            raise Unsupported(
                f"blob {blob_id} has format version {version}, which this lorebase does not "
                "read; upgrade lorebase"
            )
        chunk_size = int.from_bytes(raw[-4:], "big")
        if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
            raise DamagedBlob(blob_id, "impossible chunk size in the header")
        return _Header(raw, raw[len(MAGIC) + 1 : -4].hex(), chunk_size)

    def _decrypt(
        self, handle: OpenBlob, blob_id: str, header: _Header, key: DataKey
    ) -> Iterator[bytes]:
        """Yield authenticated plaintext chunks. Reads one record ahead to know which chunk is
        the last, since only that one may carry the final flag."""
        record_size = NONCE_BYTES + header.chunk_size + TAG_BYTES
        record = handle.read(record_size)
        index = 0
        while True:
            following = handle.read(record_size) if len(record) == record_size else b""
            final = not following
            if len(record) < NONCE_BYTES + TAG_BYTES:
                raise DamagedBlob(blob_id, "truncated")
            aad = _chunk_aad(header.raw, blob_id, index, final)
            try:
                yield key.decrypt(record[:NONCE_BYTES], record[NONCE_BYTES:], aad)
            except InvalidTag:
                raise DamagedBlob(blob_id, f"chunk {index} fails authentication") from None
            if final:
                return
            record, index = following, index + 1

    def stream(self, blob_id: str) -> Iterator[bytes]:
        """The blob's plaintext, chunk by chunk, in bounded memory. The header and key are
        checked now (``NotFound``, ``WrongKey``); damage may surface only mid-iteration, after
        earlier chunks were yielded, so use ``get`` where all-or-nothing matters."""
        handle = self._open(blob_id)
        try:
            header = self._read_header(handle, blob_id)
            key = pick_key(header.key_id, self.keys)
        except BaseException:
            handle.close()
            raise

        def chunks() -> Iterator[bytes]:
            with closing(handle):
                yield from self._decrypt(handle, blob_id, header, key)

        return chunks()

    def get(self, blob_id: str) -> bytes:
        """The whole plaintext, returned only once every chunk is authenticated."""
        return b"".join(self.stream(blob_id))

    def key_id_of(self, blob_id: str) -> str:
        """Which key a blob was written with (its key id), for diagnostics and rotation."""
        with closing(self._open(blob_id)) as handle:
            return self._read_header(handle, blob_id).key_id

    def exists(self, blob_id: str) -> bool:
        return self.storage.exists(check_blob_id(blob_id))

    def ids(self) -> set[str]:
        """Ids of the stored blobs (temporary and foreign files are not blobs)."""
        return self.storage.ids()

    @staticmethod
    def stored_ids(storage: BlobStorage | Path) -> set[str]:
        """Ids of the blobs stored in ``storage`` (a folder, or any storage), read without a
        key (to tell whether there is encrypted data before a key is chosen)."""
        return _storage(storage).ids()

    @staticmethod
    def stored_key_id(storage: BlobStorage | Path, blob_id: str) -> str:
        """The key id a stored blob was written with, read without a key (to check that the
        configured key is the one the stored data was sealed with)."""
        with closing(_storage(storage).open(check_blob_id(blob_id))) as handle:
            raw = handle.read(HEADER_BYTES)
        if len(raw) < HEADER_BYTES or not raw.startswith(MAGIC):
            raise DamagedBlob(blob_id, "no lorebase blob header")
        return raw[len(MAGIC) + 1 : -4].hex()

    # -- removing ------------------------------------------------------------------------

    def delete(self, blob_id: str) -> bool:
        """Remove a blob; False when there was none."""
        return self.storage.delete(check_blob_id(blob_id))

    def sweep_orphans(self, keep: set[str], grace: float = SWEEP_GRACE_SECONDS) -> int:
        """Delete blobs whose id is not in ``keep`` and leftovers of unfinished writes, if
        older than ``grace`` seconds (see ``SWEEP_GRACE_SECONDS``). Returns how many went.
        Where processes share the storage (PostgreSQL), another one's upload may be in flight:
        never sweep such a storage with a grace of 0."""
        return self.storage.sweep(keep, grace)

    # -- rotation ------------------------------------------------------------------------

    def rotate(self, new_key: DataKey) -> int:
        """Re-encrypt every blob under ``new_key``, one atomic write at a time; returns how
        many were re-encrypted. From the call on, this store writes with ``new_key`` and still
        reads the keys it had. Idempotent: blobs already under ``new_key`` are skipped, so
        rerunning after a crash (with the old key as ``key`` or in ``previous``) finishes the
        job. Pause uploads from other processes meanwhile: they would still write with the old
        key. Raises ``RotationIncomplete`` when some blobs could not be read; those are
        untouched.
        """
        if new_key != self._key:
            self._previous = tuple(k for k in self.keys if k != new_key)
            self._key = new_key
        rotated = 0
        failed: dict[str, LorebaseError] = {}
        for blob_id in sorted(self.ids()):
            try:
                rotated += self._rotate_one(blob_id, new_key)
            except (WrongKey, DamagedBlob, Unsupported) as exc:
                failed[blob_id] = exc
            except NotFound:  # deleted meanwhile
                continue
        if failed:
            raise RotationIncomplete(rotated, failed)
        return rotated

    def _rotate_one(self, blob_id: str, new_key: DataKey) -> bool:
        """Re-encrypt one blob, unless it is under ``new_key`` already; a blob replaced or
        deleted meanwhile is left to that write (False)."""
        with closing(self._open(blob_id)) as handle:
            header = self._read_header(handle, blob_id)
            if header.key_id == new_key.id:
                return False
            old_key = pick_key(header.key_id, self.keys)
            plain = self._decrypt(handle, blob_id, header, old_key)
            sealed = _Sealed(blob_id, new_key, plain, self.chunk_size)
            return self.storage.write(blob_id, sealed, replacing=handle.version)


def _storage(storage: BlobStorage | Path) -> BlobStorage:
    return FileBlobStorage(storage) if isinstance(storage, Path) else storage
