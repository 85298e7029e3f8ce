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


def test_the_first_holder_runs_its_setup_alone_and_the_file_names_it(tmp_path: Path) -> None:
    other = IngestLock(tmp_path, "lorebase sync")
    other.acquire()
    mine = IngestLock(tmp_path, "lorebase serve")
    mine.wait_when_busy(lambda holder: other.release())  # the other finishes meanwhile
    runs: list[int] = []
    mine.acquire(on_first=lambda: runs.append(1))
    mine.acquire(on_first=lambda: runs.append(2))  # joined, not taken: no setup
    assert runs == [1]
    # The waiter read the holder's name first; its own still starts the file.
    assert (tmp_path / "ingest.lock").read_bytes().startswith(b"lorebase process ")
    mine.release()
    mine.release()
    failing = IngestLock(tmp_path, "lorebase add")

    def broken() -> None:
        raise RuntimeError("setup failed")

    with pytest.raises(RuntimeError):
        failing.acquire(on_first=broken)
    assert not failing.held
    IngestLock(tmp_path, "lorebase sync").acquire()  # the failed setup let go of the file
