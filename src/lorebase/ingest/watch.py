"""Following folders: a pass on start, on file-system events (debounced), every
``rescan_seconds``, and — while a base waits for its embedder — retries with backoff.

Events only say *which* base to look at; the pass itself compares sizes, mtimes and hashes,
so a missed or spurious event costs nothing but a quick walk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lorebase.ingest.pipeline import STOP_REQUESTED, IngestReport
from lorebase.store.base import KnowledgeBase

DEFAULT_RESCAN_SECONDS = 60.0
DEBOUNCE_MS = 1600
TICK_MS = 1000
FIRST_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 300.0

RunPass = Callable[[KnowledgeBase], IngestReport]


@dataclass(slots=True)
class _Schedule:
    """When each base is next due, and the current retry delay of the waiting ones."""

    due: dict[int, float] = field(default_factory=dict)
    retry: dict[int, float] = field(default_factory=dict)


def watch(
    bases: Callable[[], Sequence[KnowledgeBase]],
    source_paths: Callable[[KnowledgeBase], list[Path]],
    run_pass: RunPass,
    stop: threading.Event,
    *,
    rescan_seconds: float = DEFAULT_RESCAN_SECONDS,
    debounce_ms: int = DEBOUNCE_MS,
) -> None:
    """Run passes until ``stop`` is set. ``bases`` lists the bases to follow (asked again
    each round, so sources added meanwhile are picked up)."""
    schedule = _Schedule()
    while not stop.is_set():
        kbs = [kb for kb in bases() if source_paths(kb)]
        roots = {kb.id: source_paths(kb) for kb in kbs}
        now = time.monotonic()
        for kb in kbs:
            if schedule.due.get(kb.id, 0.0) <= now:
                _run(kb, run_pass, schedule, rescan_seconds)
                if stop.is_set():
                    return
        _wait(roots, schedule, stop, debounce_ms)


def _run(kb: KnowledgeBase, run_pass: RunPass, schedule: _Schedule, rescan: float) -> None:
    report = run_pass(kb)
    now = time.monotonic()
    if report.stopped and report.stopped != STOP_REQUESTED:
        delay = min(schedule.retry.get(kb.id, FIRST_RETRY_SECONDS / 2) * 2, MAX_RETRY_SECONDS)
        schedule.retry[kb.id] = delay
        schedule.due[kb.id] = now + min(delay, rescan)
    else:
        schedule.retry.pop(kb.id, None)
        schedule.due[kb.id] = now + rescan


def _wait(
    roots: dict[int, list[Path]], schedule: _Schedule, stop: threading.Event, debounce_ms: int
) -> None:
    """Until a base is due or a file under one of its sources changes (that base becomes
    due now)."""
    from watchfiles import watch as watch_files

    paths = [p for folders in roots.values() for p in folders if p.is_dir()]
    if not paths:
        stop.wait(TICK_MS / 1000)
        return
    for changes in watch_files(
        *paths,
        stop_event=stop,
        debounce=debounce_ms,
        rust_timeout=TICK_MS,
        yield_on_timeout=True,
        watch_filter=_visible_under(paths),
        raise_interrupt=False,
    ):
        now = time.monotonic()
        for _, changed in changes:
            for kb_id, folders in roots.items():
                if any(Path(changed).is_relative_to(folder) for folder in folders):
                    schedule.due[kb_id] = now
        if any(due <= now for kb_id, due in schedule.due.items() if kb_id in roots):
            return
        if stop.is_set():
            return


def _visible_under(roots: list[Path]) -> Callable[[object, str], bool]:
    """A filter that ignores events under hidden files or folders (``.git``, editor swap
    files) below the source roots, as passes never read them."""

    def visible(change: object, path: str) -> bool:
        changed = Path(path)
        for root in roots:
            if changed.is_relative_to(root):
                return not any(p.startswith(".") for p in changed.relative_to(root).parts)
        return False

    return visible
