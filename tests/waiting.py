"""Waiting for a condition, not for a while: :func:`wait_until` polls at short intervals and
fails saying what it waited for, so a test is as quick as the machine and no flakier when the
machine is slow."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.02


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    *,
    what: str | Callable[[], str] = "",
    interval: float = POLL_S,
) -> T:
    """Call ``predicate`` until it returns something true, and return that; raise
    ``AssertionError`` naming ``what`` (or the predicate) after ``timeout`` seconds. A callable
    ``what`` is called then, to say what was seen (the last state, a log's tail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            name = said or getattr(predicate, "__name__", repr(predicate))
            raise AssertionError(f"timed out after {timeout:g} s waiting for {name}")
        time.sleep(interval)
