"""How far a pass is and how long it has left, from its :class:`~lorebase.ingest.report.Progress`
reports: pure functions (the CLI's bar and its plain lines say the same), and a small meter that
keeps the recent reports they read.

The time left is the chunks still to do over the *recent* rate (the last ``RATE_WINDOW_S``),
not the rate since the start: the first seconds of a pass read files and write them (searchable
by keyword) faster than the model embeds, and a rate from the start would promise too little.
The chunks still to do are those of the files read, plus, for the files not read yet, as many
per file as the read ones had. Until a rate has been measured over ``MIN_SPAN_S`` the estimate
says so instead of guessing.

A pass records its rate and the chunks it still expects beside its base's progress
(:meth:`~lorebase.store.base.Catalogue.set_kb_progress`), so ``lorebase status``, the API, the
events, the metrics and the page say the same time left (:func:`pass_seconds_left`) from
another process.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lorebase.ingest.report import Progress
from lorebase.store.states import KbState

if TYPE_CHECKING:
    from lorebase.store.base import KnowledgeBase

RATE_WINDOW_S = 60.0
"""The rate is measured over the last this many seconds of reports: chunks differ in length,
so a shorter window made the time left swing by half (measured on the sample documents)."""
MIN_SPAN_S = 2.0
"""No rate from reports closer together than this (the first batch is a burst)."""

Sample = tuple[float, int]  # (seconds since the pass began, chunks done)


@dataclass(frozen=True, slots=True)
class Estimate:
    rate: float | None  # chunks done per second, recently; None while estimating
    chunks_expected: int  # the chunks of the files read, and an estimate for the others
    seconds_left: float | None  # None while estimating


def recent_rate(samples: Sequence[Sample], window: float = RATE_WINDOW_S) -> float | None:
    """Chunks per second from the last sample at or before ``window`` seconds ahead of the
    newest (or the first one) to the newest (samples oldest first); None when they span less
    than ``MIN_SPAN_S`` or no chunk was done in that time."""
    if len(samples) < 2:
        return None
    newest_t, newest_done = samples[-1]
    oldest_t, oldest_done = samples[0]
    for t, done in samples:
        if t > newest_t - window:
            break
        oldest_t, oldest_done = t, done
    span = newest_t - oldest_t
    if span < MIN_SPAN_S or newest_done <= oldest_done:
        return None
    return (newest_done - oldest_done) / span


def expected_chunks(progress: Progress) -> int:
    """The chunks of the files read so far, plus as many per file for the files left."""
    left = max(0, progress.files_total - progress.files_done)
    if not left or not progress.files_read:
        return max(progress.chunks_total, progress.chunks_done)
    per_file = progress.chunks_total / progress.files_read
    return max(progress.chunks_total + round(per_file * left), progress.chunks_done)


def seconds_left(work_left: float, rate: float | None) -> float | None:
    """The seconds ``work_left`` (chunks) takes at ``rate`` (chunks per second): None until
    there is a rate (none, or not above zero), never negative (work done beyond what was
    expected leaves none), and more work left never takes less time. Pure."""
    if rate is None or not rate > 0:
        return None
    return max(0.0, work_left) / rate


def estimate(progress: Progress, rate: float | None) -> Estimate:
    expected = expected_chunks(progress)
    remaining = expected - progress.chunks_done
    if remaining <= 0 and progress.files_done >= progress.files_total:
        return Estimate(rate, expected, 0.0)
    left = seconds_left(remaining, rate)
    return Estimate(rate if left is not None else None, expected, left)


def chunks_left(progress: Progress, guess: Estimate) -> int:
    """The chunks a pass still expects to do (never negative). Pure."""
    return max(0, guess.chunks_expected - progress.chunks_done)


def pass_seconds_left(kb: KnowledgeBase) -> float | None:
    """The time left of the pass running over ``kb``, from the rate and the chunks left it
    last recorded; None when no pass runs or its rate is still being measured."""
    if kb.state is not KbState.INDEXING or kb.progress_left is None:
        return None
    return seconds_left(kb.progress_left, kb.progress_rate)


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 10 min``: as precise as a person plans with."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02} min"


def time_left(guess: Estimate) -> str:
    return left_phrase(guess.seconds_left)


def left_phrase(seconds: float | None) -> str:
    """``about 3 min 05 s left``, ``finishing``, or ``estimating time left`` (None: no rate
    yet): what the bar, ``status`` and the plain lines say. Pure."""
    if seconds is None:
        return "estimating time left"
    if seconds < 1:
        return "finishing"
    return f"about {duration(seconds)} left"


def describe(progress: Progress, guess: Estimate) -> str:
    """One plain line: files, chunks done of those expected, chunks searchable by keyword,
    the rate and the time left."""
    rate = "" if guess.rate is None else f" · {guess.rate:,.1f} chunks/s"
    return (
        f"{progress.files_done:,}/{progress.files_total:,} files"
        f" · {progress.chunks_done:,}/{guess.chunks_expected:,} chunks done"
        f" · {progress.chunks:,} searchable by keyword"
        f"{rate} · {time_left(guess)} · {duration(progress.elapsed)} elapsed"
    )


class RateMeter:
    """The recent reports of one pass, and the estimate they give."""

    def __init__(self, window: float = RATE_WINDOW_S) -> None:
        self.window = window
        self._samples: deque[Sample] = deque()

    def add(self, progress: Progress) -> Estimate:
        samples = self._samples
        samples.append((progress.elapsed, progress.chunks_done))
        # Keep one sample at or before the window's start: the rate spans the whole window.
        while len(samples) > 2 and samples[1][0] <= progress.elapsed - self.window:
            samples.popleft()
        return estimate(progress, recent_rate(samples, self.window))
