"""Background threads lower their own CPU priority; the threads they start inherit it, the
process's other threads keep theirs."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from lorebase.priority import BACKGROUND_NICENESS, MOST_NICE, lower_this_thread

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's"
)


def _nice(thread_id: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, thread_id)


def test_a_background_thread_and_what_it_starts_run_lower_than_the_rest() -> None:
    seen: dict[str, int] = {}
    main = _nice(threading.get_native_id())

    def child() -> None:
        seen["child"] = _nice(threading.get_native_id())

    def background() -> None:
        seen["lowered"] = lower_this_thread()
        seen["background"] = _nice(threading.get_native_id())
        started = threading.Thread(target=child)
        started.start()
        started.join()

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    assert seen["lowered"] is True
    assert seen["background"] == min(MOST_NICE, main + BACKGROUND_NICENESS)
    assert seen["child"] == seen["background"]
    assert _nice(threading.get_native_id()) == main  # the caller's thread is untouched


def test_lowering_by_nothing_changes_nothing() -> None:
    before = _nice(threading.get_native_id())
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(lower_this_thread(0)))
    thread.start()
    thread.join()
    assert result == [False] and _nice(threading.get_native_id()) == before


def test_a_sandbox_that_forbids_it_leaves_the_priority_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where changing a priority is refused (a container's seccomp profile), the thread runs
    on at the process's priority and says so in the log, by the error's class only."""

    def refused(*_: object) -> None:
        raise PermissionError("not permitted")

    monkeypatch.setattr(os, "setpriority", refused)
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(lower_this_thread()))
    thread.start()
    thread.join()
    assert result == [False]


def test_a_background_process_lowers_every_thread_it_has_and_will_have() -> None:
    """A process whose whole work is background (a server's indexer) lowers the threads a
    library already started (here: one started before) and those started after."""
    import subprocess

    code = """
import os, threading
from lorebase.priority import lower_this_process
gate = threading.Event()
early = threading.Thread(target=gate.wait); early.start()
before = os.getpriority(os.PRIO_PROCESS, 0)
assert lower_this_process()
late = threading.Thread(target=gate.wait); late.start()
nices = {os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")}
gate.set()
print(before, sorted(nices))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    before, nices = done.stdout.split(" ", 1)
    if int(before) >= MOST_NICE:
        pytest.skip("the tests already run at the lowest priority")
    assert nices.strip() == f"[{min(MOST_NICE, int(before) + BACKGROUND_NICENESS)}]"


def test_a_process_in_a_sandbox_that_forbids_it_keeps_its_priority(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Where changing a priority is refused, the indexer runs on at the process's priority
    and says so, by the error's class only."""
    import logging

    from lorebase.priority import lower_this_process

    def refused(*_: object) -> None:
        raise PermissionError("not permitted")

    monkeypatch.setattr(os, "setpriority", refused)
    with caplog.at_level(logging.INFO, logger="lorebase.priority"):
        assert lower_this_process() is False
    assert "this process keeps its priority (PermissionError)" in caplog.text
