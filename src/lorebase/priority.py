"""Background computation yields the processor to requests: the model runtime's threads that
embed documents, the extraction processes and a graph build run at a lower CPU priority.

On Linux a nice value belongs to a thread, and the threads and processes a thread starts
inherit it. Only threads that do their work outside the interpreter are lowered: a lowered
thread holding the interpreter lock would keep a search waiting for it while the scheduler
gives its core to others (a priority inversion). So an indexing thread keeps its priority, and
the documents' model session is made and run on a lowered thread (its pool's threads are
started then, and inherit it), the extraction worker lowers itself. A server's searches are
then scheduled first when both want a core (``bench/lean.py``'s ingest part: a search's p95
during an ingest against idle). Elsewhere (macOS, Windows) nothing changes.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

logger = logging.getLogger(__name__)

BACKGROUND_NICENESS = 10
"""How much lower than the process a background thread runs (the Unix scale tops out at 19)."""

MOST_NICE = 19


def lower_this_thread(by: int = BACKGROUND_NICENESS) -> bool:
    """Lower the calling thread's CPU priority ``by`` steps (never past the lowest); whether
    it was lowered."""
    return _lowered([threading.get_native_id()], by, "background threads keep the process's")


def lower_this_process(by: int = BACKGROUND_NICENESS) -> bool:
    """Lower every thread of this process ``by`` steps (the threads they start inherit it):
    for a process whose whole work is background (the server's indexer), called before it
    starts threads of its own — a library may have started some at import (OpenBLAS's pool).
    Whether its threads were lowered."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        threads = [int(name) for name in os.listdir("/proc/self/task")]
    except (OSError, ValueError) as error:  # no /proc to list them in
        logger.info("this process keeps its priority (%s)", type(error).__name__)
        return False
    return _lowered(threads, by, "this process keeps its")


def _lowered(threads: list[int], by: int, keeps: str) -> bool:
    """Each of ``threads`` lowered ``by`` steps (Linux only); False, logged by ``keeps`` and
    the error's class, where a sandbox forbids it (they run at the priority they had)."""
    if not sys.platform.startswith("linux") or by <= 0:
        return False
    try:
        for thread in threads:
            current = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, min(MOST_NICE, current + by))
    except OSError as error:
        logger.info("%s priority (%s)", keeps, type(error).__name__)
        return False
    return True
