"""The ingestion lock: one process at a time indexes a data directory.

Searches need no lock (SQLite's WAL lets readers run beside a writer); passes over sources and
uploads do, so that a ``watch`` and a ``sync`` never index the same files twice. It is held
while indexing, not while idle: a server takes it for each job, so ``lorebase add`` beside an
idle server goes ahead, and beside a busy one waits for it. The lock is an
advisory ``flock`` on a file in the data directory: the kernel drops it when the holder dies,
even by ``kill -9``, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lorebase.errors import Conflict

LOCK_FILE = "ingest.lock"
SERVE_LOCK_FILE = "serve.lock"
"""Held by a server over the embedded store for its whole life, idle or not: what must not run
beside one (a restore, a key rotation, a repair, a vacuum) takes it too, and is refused."""
WATCH_LOCK_FILE = "watch.lock"
"""Held by the process following the folders (one per machine and data directory); its
passes take the ingestion lock one at a time, so other indexers go between them."""


WAIT_POLL_SECONDS = 0.25
"""How often a process waiting for the lock tries it again."""

Waiting = Callable[[str], None]
"""Told once, with the holder's description, that the lock is busy and this process waits."""


class IngestLock:
    """Re-entrant within one object: nested ``with`` blocks share one acquisition, whichever
    of the process's threads hold them (a server's workers index as one indexer).

    By default a busy lock raises :class:`Conflict` naming its holder; after
    :meth:`wait_when_busy` it is waited for instead (a server's jobs, ``lorebase add`` beside a
    server), until the holder lets go or the ``stop`` event is set."""

    def __init__(
        self,
        data_dir: Path,
        holder: str = "lorebase",
        file: str = LOCK_FILE,
        doing: str = "is indexing this data directory",
        advice: str = "wait for it to finish (or stop it) and try again — searches work meanwhile",
    ) -> None:
        """``doing``: what the holder is said to be doing when the lock is busy; ``advice``:
        what to do about it."""
        self.path = data_dir / file
        self.holder = holder
        self.doing = doing
        self.advice = advice
        self._fd: int | None = None
        self._depth = 0
        self._guard = threading.Lock()
        self._on_wait: Waiting | None = None
        self._stop: threading.Event | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def wait_when_busy(self, on_wait: Waiting, stop: threading.Event | None = None) -> None:
        """From now on, wait for a busy lock (telling ``on_wait`` once per wait) instead of
        refusing; ``stop`` set ends a wait with :class:`Conflict`."""
        self._on_wait, self._stop = on_wait, stop

    def acquire(self, on_first: Callable[[], object] | None = None) -> None:
        """Take the lock (or join this process's hold). ``on_first`` runs when this call is
        the one that took it, before any other thread of the process can join: what holding
        it alone proves (no pass is running anywhere) is still true while it runs."""
        with self._guard:
            if self._fd is not None:
                self._depth += 1
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                self._lock(fd)
            except BaseException:
                os.close(fd)
                raise
            os.ftruncate(fd, 0)
            # Reading the holder's name moved the offset: the name goes at the start.
            os.pwrite(fd, f"lorebase process {os.getpid()} ({self.holder})".encode(), 0)
            self._fd = fd
            self._depth = 1
            if on_first is not None:
                try:
                    on_first()
                except BaseException:
                    self._depth = 0
                    self._unlock()
                    raise

    def _lock(self, fd: int) -> None:
        """Take the file's lock: at once, or after waiting when this lock waits."""
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                other = _holder(fd)
            if self._on_wait is None:
                raise Conflict(f"{other} {self.doing}; {self.advice}") from None
            if not told:
                self._on_wait(other)
                told = True
            if self._stop is not None and self._stop.wait(WAIT_POLL_SECONDS):
                raise Conflict(f"stopped waiting: {other} {self.doing}") from None
            if self._stop is None:
                time.sleep(WAIT_POLL_SECONDS)

    def release(self) -> None:
        with self._guard:
            if self._fd is None:
                return
            self._depth -= 1
            if self._depth == 0:
                self._unlock()

    def _unlock(self) -> None:
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> IngestLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    """Who holds the lock, as it wrote itself into the file."""
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"


def serving_lock(data_dir: Path, holder: str) -> IngestLock:
    """The lock a server holds for its life (see :data:`SERVE_LOCK_FILE`), not yet taken: a
    command that must not run beside a server takes it for as long as it runs."""
    return IngestLock(
        data_dir,
        holder,
        SERVE_LOCK_FILE,
        doing="is serving this data directory",
        advice="stop the server first, then try again",
    )
