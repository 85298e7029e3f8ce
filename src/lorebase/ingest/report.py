"""What a pass tells its caller: its totals when it ends (:class:`IngestReport`), where it is
while it runs (:class:`Progress`), and the running counts it builds those from."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from lorebase.errors import LorebaseError, Unavailable

STOP_REQUESTED = "stop requested"
"""``IngestReport.stopped`` of a pass that ended early because it was asked to."""


@dataclass(slots=True)
class IngestReport:
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # why the pass ended early (embedder gone, stop requested)
    # What the walks left out, by reason (lorebase.ingest.ignore): never which files.
    left_out: dict[str, int] = field(default_factory=dict)
    # The error that cut the pass short, carried as it was raised (``stopped`` is its text).
    error: LorebaseError | None = field(default=None, repr=False, compare=False)

    def stop(self, error: LorebaseError) -> None:
        """The pass ends early because of ``error`` (the first reason is kept)."""
        if self.stopped is None:
            self.stopped, self.error = str(error), error

    def cut_short(self) -> LorebaseError | None:
        """What ended the pass early, unless it was asked to stop: the error a surface
        reports (the CLI exits with its code)."""
        if self.stopped is None or self.stopped == STOP_REQUESTED:
            return None
        return self.error or Unavailable(self.stopped)

    def merge(self, other: IngestReport) -> None:
        for name in (
            "files",
            "added",
            "updated",
            "unchanged",
            "removed",
            "chunks",
            "embedded",
            "reused",
            "seconds",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failed += other.failed
        if self.stopped is None:
            self.stopped, self.error = other.stopped, other.error
        self.left_out = merge_counts(self.left_out, other.left_out)


def merge_counts(*counts: Mapping[str, int]) -> dict[str, int]:
    """Counts by reason added up, in a stable (sorted) order of reasons."""
    total: Counter[str] = Counter()
    for count in counts:
        total.update(count)
    return {reason: total[reason] for reason in sorted(total) if total[reason]}


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a pass is: files done (read, or skipped unchanged) of the files it looks at, and
    how many of them were read; chunks written (searchable by keyword); chunks done (their
    vectors made, or written when there is no embedder) of the chunks known so far (cut from
    the files read); seconds since the pass began. :mod:`lorebase.ingest.progress` turns a
    series of them into a rate and the time left."""

    files_done: int
    files_total: int
    chunks: int
    chunks_done: int = 0
    chunks_total: int = 0
    elapsed: float = 0.0
    files_read: int = 0


@dataclass(slots=True)
class PassCounts:
    """What a pass has done so far, for its progress reports."""

    started: float
    files_total: int
    files_done: int = 0
    files_read: int = 0
    chunks_written: int = 0
    chunks_done: int = 0
    chunks_total: int = 0
    chunks_waiting: int = 0  # of the documents written that wait for their vectors

    def progress(self) -> Progress:
        return Progress(
            self.files_done,
            self.files_total,
            self.chunks_written,
            self.chunks_done,
            self.chunks_total,
            time.perf_counter() - self.started,
            self.files_read,
        )
