"""Where a long-running lorebase process (``serve``, its indexer, ``lorebase worker``) writes
its own log lines: stderr, once per process."""

from __future__ import annotations

import logging

LOG_HANDLER = "lorebase-serve"


def configure_logging(level: int = logging.INFO) -> None:
    """lorebase's own log lines (access lines, background failures, unexpected errors) to
    stderr, once per process; they carry ids, classes and timings, never content."""
    logger = logging.getLogger("lorebase")
    if any(getattr(h, "name", "") == LOG_HANDLER for h in logger.handlers):
        return
    handler = logging.StreamHandler()
    handler.set_name(LOG_HANDLER)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
