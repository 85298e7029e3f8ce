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
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

SEARCHES_AT_ONCE = 1


class Turns:
    """The turns of one process's searches (``at_once`` None: every search runs at once)."""

    def __init__(self, at_once: int | None = SEARCHES_AT_ONCE) -> None:
        self.at_once = at_once
        self._free = threading.Semaphore(at_once) if at_once is not None else None
        self._holding = threading.local()

    def _held(self) -> bool:
        return bool(getattr(self._holding, "turn", False))

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for a turn and hold it for the block (a thread holding one already keeps
        it: a search inside a search does not wait on itself)."""
        free = self._free
        if free is None or self._held():
            yield
            return
        free.acquire()
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
            free.acquire()
            self._holding.turn = True
