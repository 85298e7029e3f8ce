"""Where the encrypted bytes of blobs live: the ``BlobStorage`` seam under the blob format.

The blob store (``blobs.py``) encrypts and authenticates; a storage only keeps opaque bytes
under a blob id, and promises:

- ``write`` is atomic: readers see the old bytes or all the new ones, never a mix, and a write
  that fails or is cut short (an exception from ``parts``, a crash) leaves the old blob (or
  none) as it was. It consumes ``parts`` as they come, in bounded memory. With ``replacing``
  (the ``version`` of an open blob) it replaces the blob only if it is still that version,
  and answers whether it did (key rotation must never overwrite a newer write).
- ``open`` gives the bytes from the start, read in pieces, as one consistent version
  (``NotFound`` when there is none); ``version`` changes with every write.
- ``sweep`` removes what is not in ``keep`` and older than ``grace`` seconds, with whatever
  leftovers of unfinished writes the storage has, in one step per blob so a blob written
  meanwhile is never swept.
- ``shared`` says whether other processes, perhaps on other machines, use the storage at the
  same time (they must then all hold the same data key, and never sweep with no grace);
  ``rotating`` is held for the length of a key rotation and refuses a second one at once.

``FileBlobStorage`` keeps one file per blob in a folder (``PostgresBlobStorage``, in
``postgres_storage.py``, rows in a shared database). Blob ids are checked before they reach
a storage: 16-64 lowercase hex characters.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Collection, Hashable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import BinaryIO, Protocol

from lorebase.errors import InvalidInput, NotFound
from lorebase.private import PRIVATE_DIR, PRIVATE_FILE
from lorebase.vault.keys import fsync_dir

BLOB_ID_PATTERN = re.compile(r"[0-9a-f]{16,64}")
TEMP_PATTERN = re.compile(r"\.[0-9a-f]{16,64}\.[0-9a-f]{16}\.tmp")


def check_blob_id(blob_id: str) -> str:
    """Blob ids become file names, so only 16-64 lowercase hex characters pass."""
    if not isinstance(blob_id, str) or not BLOB_ID_PATTERN.fullmatch(blob_id):
        raise InvalidInput("a blob id must be 16 to 64 lowercase hexadecimal characters")
    return blob_id


class OpenBlob(Protocol):
    """One stored blob's bytes, open for reading from the start."""

    @property
    def version(self) -> Hashable:
        """Tells this write of the blob from any later one."""

    def read(self, size: int, /) -> bytes:
        """Up to ``size`` bytes: fewer only at the end (``b""`` past it)."""

    def close(self) -> None: ...


class BlobStorage(Protocol):
    """Opaque bytes by blob id (see the module's docstring for the promises)."""

    @property
    def shared(self) -> bool:
        """Used by other processes (on other machines) at the same time."""

    def write(
        self, blob_id: str, parts: Iterable[bytes], *, replacing: Hashable | None = None
    ) -> bool: ...

    def open(self, blob_id: str) -> OpenBlob: ...

    def exists(self, blob_id: str) -> bool: ...

    def delete(self, blob_id: str) -> bool:
        """Remove a blob; False when there was none."""

    def ids(self) -> set[str]:
        """Ids of the stored blobs (leftovers of unfinished writes are not blobs)."""

    def sweep(self, keep: Collection[str], grace: float) -> int:
        """Remove blobs not in ``keep`` and leftovers, older than ``grace`` seconds; returns
        how many went."""

    def rotating(self) -> AbstractContextManager[None]:
        """Held while a key rotation runs; ``Conflict`` when another one already does."""


class _OpenFile:
    __slots__ = ("_handle", "version")

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        stat = os.fstat(handle.fileno())
        self.version: Hashable = (stat.st_ino, stat.st_mtime_ns)

    def read(self, size: int, /) -> bytes:
        return self._handle.read(size)

    def close(self) -> None:
        self._handle.close()


class FileBlobStorage:
    """One file per blob in ``root``, named by the blob id only, mode 0600 in a 0700 folder.

    A write goes to a temporary file in the same folder (``.<id>.<random>.tmp``), is fsynced,
    then renamed over the final name (and the folder fsynced), so a crash leaves the old file
    or the new one, never a mix; leftover temporary files are swept."""

    shared = False  # one data directory; its ingestion lock keeps processes apart

    def __init__(self, root: Path) -> None:
        self.root = root

    def rotating(self) -> AbstractContextManager[None]:
        """Nothing to take: rotations run under the data directory's ingestion lock."""
        return nullcontext()

    def _path(self, blob_id: str) -> Path:
        return self.root / check_blob_id(blob_id)

    def write(
        self, blob_id: str, parts: Iterable[bytes], *, replacing: Hashable | None = None
    ) -> bool:
        path = self._path(blob_id)
        self.root.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
        temp = self.root / f".{blob_id}.{secrets.token_hex(8)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    out.write(part)
                out.flush()
                os.fsync(out.fileno())
            if replacing is not None and self._version(path) != replacing:
                temp.unlink(missing_ok=True)  # replaced or deleted meanwhile: that write wins
                return False
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        fsync_dir(self.root)
        return True

    @staticmethod
    def _version(path: Path) -> Hashable | None:
        try:
            stat = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_mtime_ns)

    def open(self, blob_id: str) -> OpenBlob:
        path = self._path(blob_id)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"blob {blob_id} does not exist") from None
        return _OpenFile(os.fdopen(fd, "rb"))

    def exists(self, blob_id: str) -> bool:
        return self._path(blob_id).is_file()

    def delete(self, blob_id: str) -> bool:
        try:
            self._path(blob_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def ids(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        with os.scandir(self.root) as entries:
            return {
                entry.name
                for entry in entries
                if BLOB_ID_PATTERN.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
            }

    def sweep(self, keep: Collection[str], grace: float) -> int:
        """Blobs not in ``keep`` and temporary files, by their modification time."""
        if not self.root.is_dir():
            return 0
        cutoff = time.time() - grace
        removed = 0
        with os.scandir(self.root) as entries:
            for entry in entries:
                orphan = BLOB_ID_PATTERN.fullmatch(entry.name) and entry.name not in keep
                if not (orphan or TEMP_PATTERN.fullmatch(entry.name)):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                        continue
                    os.unlink(entry.path)
                except FileNotFoundError:  # removed meanwhile
                    continue
                removed += 1
        return removed
