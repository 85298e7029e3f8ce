"""Following folders: a pass on start, on file-system events (debounced), every
``rescan_seconds``, and — while a base waits for its embedder — retries with backoff.

File-system events are collected by a background thread that starts before the first pass
and keeps running during passes, so a change made while a pass runs is not missed. Events
only say *which* base to look at; the pass compares sizes, mtimes and hashes, so a missed or
spurious event costs nothing but a quick walk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lorebase.ingest.ignore import DEPENDENCY_OR_BUILD_FOLDERS
from lorebase.ingest.report import STOP_REQUESTED, IngestReport

if TYPE_CHECKING:
    from lorebase.store.base import KnowledgeBase

DEFAULT_RESCAN_SECONDS = 60.0
DEBOUNCE_MS = 1600
TICK_SECONDS = 1.0
FIRST_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 300.0

RunPass = Callable[["KnowledgeBase"], IngestReport]


@dataclass(slots=True)
class _Schedule:
    """When each base is next due, and the current retry delay of the waiting ones."""

    due: dict[int, float] = field(default_factory=dict)
    retry: dict[int, float] = field(default_factory=dict)


class _Changes:
    """Paths changed since last asked, gathered by a watchfiles thread over fixed roots."""

    def __init__(self, roots: list[Path], stop: threading.Event, debounce_ms: int) -> None:
        self.roots = roots
        self._changed: set[Path] = set()
        self._lock = threading.Lock()
        self.arrived = threading.Event()
        self._halt = threading.Event()
        self._outer_stop = stop
        self._thread = threading.Thread(
            target=self._run, args=(debounce_ms,), name="lorebase-fs-events", daemon=True
        )
        self._thread.start()

    def _run(self, debounce_ms: int) -> None:
        from watchfiles import watch as watch_files

        existing = [root for root in self.roots if root.exists()]  # folders and single files
        if not existing:
            return
        halted = _Either(self._halt, self._outer_stop)
        for changes in watch_files(
            *existing,
            stop_event=halted,
            debounce=debounce_ms,
            watch_filter=_visible_under(existing),
            raise_interrupt=False,
        ):
            with self._lock:
                self._changed.update(Path(path) for _, path in changes)
            self.arrived.set()

    def take(self) -> set[Path]:
        with self._lock:
            changed, self._changed = self._changed, set()
        self.arrived.clear()
        return changed

    def close(self) -> None:
        self._halt.set()
        self._thread.join(timeout=10)


class _Either:
    """An event-like object set when either of two events is (watchfiles polls ``is_set``)."""

    def __init__(self, first: threading.Event, second: threading.Event) -> None:
        self._events = (first, second)

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)


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
    changes: _Changes | None = None
    try:
        while not stop.is_set():
            roots = {kb.id: source_paths(kb) for kb in bases()}
            roots = {kb_id: folders for kb_id, folders in roots.items() if folders}
            all_roots = sorted({p for folders in roots.values() for p in folders})
            if changes is None or changes.roots != all_roots:
                if changes is not None:
                    changes.close()
                changes = _Changes(all_roots, stop, debounce_ms)
            _mark_changed(changes.take(), roots, schedule)
            now = time.monotonic()
            for kb in bases():
                if kb.id in roots and schedule.due.get(kb.id, 0.0) <= now:
                    _run(kb, run_pass, schedule, rescan_seconds)
                    if stop.is_set():
                        return
            changes.arrived.wait(_until_next(schedule, roots))
    finally:
        if changes is not None:
            changes.close()


def _mark_changed(changed: set[Path], roots: dict[int, list[Path]], schedule: _Schedule) -> None:
    now = time.monotonic()
    for path in changed:
        for kb_id, folders in roots.items():
            if any(path.is_relative_to(folder) for folder in folders):
                schedule.due[kb_id] = min(schedule.due.get(kb_id, now), now)


def _until_next(schedule: _Schedule, roots: dict[int, list[Path]]) -> float:
    upcoming = [schedule.due.get(kb_id, 0.0) for kb_id in roots]
    wait = min(upcoming, default=time.monotonic() + TICK_SECONDS) - time.monotonic()
    return max(0.0, min(wait, TICK_SECONDS))


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


def _visible_under(roots: list[Path]) -> Callable[[object, str], bool]:
    """A filter that ignores events under hidden files or folders (``.git``, editor swap
    files) and inside dependency or build folders (``node_modules`` churning through an
    install) below the source roots, as passes never read them. Ignore files are not
    consulted here: an event on an ignored file costs a pass that finds nothing new."""

    def visible(change: object, path: str) -> bool:
        changed = Path(path)
        for root in roots:
            if changed.is_relative_to(root):
                parts = changed.relative_to(root).parts
                if any(p.startswith(".") for p in parts):
                    return False
                return not any(p in DEPENDENCY_OR_BUILD_FOLDERS for p in parts[:-1])
        return False

    return visible
