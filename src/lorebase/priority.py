"""Background work yields the processor to requests: indexing runs at a lower CPU priority.

On Linux a nice value belongs to a thread, and the threads and processes a thread starts
inherit it: a worker thread that lowers its own priority before it first embeds also lowers
the model runtime's thread pool it creates then, and the extraction processes it starts. A
server's searches are then scheduled first when both want a core (measured in
``bench/lean.py``'s ingest part: a search's p95 during an ingest against idle). Elsewhere
(macOS, Windows) nothing changes.
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
    if not sys.platform.startswith("linux") or by <= 0:
        return False
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(MOST_NICE, current + by))
    except OSError as error:  # a sandbox that forbids it: run at the process's priority
        logger.info("background threads keep the process's priority (%s)", type(error).__name__)
        return False
    return True
