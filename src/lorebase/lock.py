"""The ingestion lock: one process at a time indexes a data directory.

Searches need no lock (SQLite's WAL lets readers run beside a writer); passes over sources and
uploads do, so that a ``watch`` and a ``sync`` never index the same files twice. The lock is an
advisory ``flock`` on a file in the data directory: the kernel drops it when the holder dies,
even by ``kill -9``, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from lorebase.errors import Conflict

LOCK_FILE = "ingest.lock"


class IngestLock:
    """Re-entrant within one object: nested ``with`` blocks share one acquisition."""

    def __init__(self, data_dir: Path, holder: str = "lorebase") -> None:
        self.path = data_dir / LOCK_FILE
        self.holder = holder
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            self._depth += 1
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise Conflict(
                f"{other} is indexing this data directory; wait for it to finish (or stop it) "
                "and try again — searches work meanwhile"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"lorebase process {os.getpid()} ({self.holder})".encode())
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth == 0:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> IngestLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
