"""Searches take turns in a process: :data:`SEARCHES_AT_ONCE` runs, the others wait.

A search spends most of its time in the interpreter (fusing, reading its hits, cutting their
snippets), which one thread of a process holds at a time. Sixteen searches at once in one
process each waited on the others for it, and the hand-overs cost: on 2 cores, 16 clients of
``serve --processes 2`` got 121–129 searches/s with one search at a time against 87–119 with
all at once, and 13.9–15.0 ms of server CPU a search against 14.3–18.3 (four interleaved
runs; two at a time measured between the two); one process served 16 clients 0.95x the
searches/s of one client, against 0.58x. A search gives its turn up while it waits on another
machine (a model server embedding its question, a reranker): that wait holds no interpreter
(:meth:`Turns.aside`). Over PostgreSQL searches take no turns: a search there waits on the
database, another machine, for much of its time.

A search runs parts of itself beside it on other threads (its keyword arm and its question's
language while the question is embedded): another core would idle. Where as many processes
answer searches as the machine has cores, and other searches wait for a turn here
(:meth:`Turns.room_beside`), the cores are busy with searches and the other threads add only
hand-overs. Sixteen clients of ``serve --processes 2`` on 2 cores, a search running them on its
own thread then against always beside it: 183.6 against 175.9 searches/s and 9.8 against 10.1
ms of server CPU a search (three interleaved rounds, quiet machine; 162.0 against 146.6 in five
on a busier hour: bench/README, issue 33, eleventh step). In one process the other core is its
helpers' (sixteen clients of one process: 0.85x one client's searches/s with them on the
search's thread whenever searches waited, 0.92-0.95x beside), and one client alone waits ~1 ms
longer a search without them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

SEARCHES_AT_ONCE = 1


class Turns:
    """The turns of one process's searches (``at_once`` None: every search runs at once;
    ``cores_shared``: as many processes answer searches as the machine has cores)."""

    def __init__(
        self, at_once: int | None = SEARCHES_AT_ONCE, *, cores_shared: bool = False
    ) -> None:
        self.at_once = at_once
        self.cores_shared = cores_shared
        self._free = threading.Semaphore(at_once) if at_once is not None else None
        self._holding = threading.local()
        self._waiting = 0  # searches waiting for a turn
        self._counting = threading.Lock()

    def _held(self) -> bool:
        return bool(getattr(self._holding, "turn", False))

    def crowded(self) -> bool:
        """Whether another search waits for a turn now (never without a limit)."""
        return self._waiting > 0

    def room_beside(self) -> bool:
        """Whether a search should run parts of itself on other threads now: not while other
        processes keep the other cores busy and searches wait here."""
        return not (self.cores_shared and self.crowded())

    def _take(self, free: threading.Semaphore) -> None:
        """Wait for a turn, counted among the waiting while it waits."""
        if free.acquire(blocking=False):
            return
        with self._counting:
            self._waiting += 1
        try:
            free.acquire()
        finally:
            with self._counting:
                self._waiting -= 1

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for a turn and hold it for the block (a thread holding one already keeps
        it: a search inside a search does not wait on itself)."""
        free = self._free
        if free is None or self._held():
            yield
            return
        self._take(free)
        self._holding.turn = True
        try:
            yield
        finally:
            self._holding.turn = False
            free.release()

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Give this thread's turn (if it holds one) to another search while the block waits
        on another machine, and take one again after."""
        free = self._free
        if free is None or not self._held():
            yield
            return
        self._holding.turn = False
        free.release()
        try:
            yield
        finally:
            self._take(free)
            self._holding.turn = True
