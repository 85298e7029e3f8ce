"""The ingestion lock: refused with the holder named, or waited for once asked to wait; one
acquisition shared by the threads of a process; a stop ends a wait."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lorebase.errors import Conflict
from lorebase.lock import IngestLock


def test_a_busy_lock_names_its_holder_or_is_waited_for(tmp_path: Path) -> None:
    server = IngestLock(tmp_path, "lorebase serve")
    server.acquire()
    adding = IngestLock(tmp_path, "lorebase add")
    with pytest.raises(Conflict, match=r"\(lorebase serve\) is indexing this data directory"):
        adding.acquire()
    told: list[str] = []
    got = threading.Event()
    adding.wait_when_busy(told.append)

    def take() -> None:
        with adding:
            got.set()

    waiter = threading.Thread(target=take)
    waiter.start()
    assert not got.wait(0.6)  # still waiting while the server indexes
    assert len(told) == 1 and "(lorebase serve)" in told[0]
    server.release()
    assert got.wait(5)
    waiter.join(5)
    assert not adding.held and not server.held


def test_a_stop_ends_a_wait_and_the_threads_of_a_process_share_one_hold(tmp_path: Path) -> None:
    other = IngestLock(tmp_path, "lorebase sync")
    other.acquire()
    stop = threading.Event()
    mine = IngestLock(tmp_path, "lorebase serve")
    mine.wait_when_busy(lambda holder: stop.set(), stop)  # told it waits: stop at once
    with pytest.raises(Conflict, match="stopped waiting"):
        mine.acquire()
    assert not mine.held
    other.release()
    mine.acquire()

    def nested() -> None:
        mine.acquire()
        mine.release()

    inside = threading.Thread(target=nested)
    inside.start()
    inside.join(5)
    assert mine.held  # another thread's acquire and release left the first hold in place
    mine.release()
    assert not mine.held
    IngestLock(tmp_path, "lorebase add").acquire()  # free again
