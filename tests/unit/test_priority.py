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
