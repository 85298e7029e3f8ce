"""The progress of a long pass for a person: a live bar on a terminal; otherwise (a log, CI,
``make run 2>&1 | tee``) a plain line on stderr every ``PLAIN_EVERY_S`` seconds and one at the
end. Both say files and chunks done of the total, chunks searchable by keyword, chunks per
second and the time left (:mod:`lorebase.ingest.progress`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from lorebase.ingest.progress import Estimate, RateMeter, describe, time_left

if TYPE_CHECKING:
    from lorebase.ingest.report import Progress

PLAIN_EVERY_S = 5.0
"""A plain line at most this often (and always the first report's and the last one's)."""


def compact(progress: Progress, guess: Estimate) -> str:
    """The bar's text: what a terminal line has room for beside the bar."""
    rate = "" if guess.rate is None else f" · {guess.rate:,.0f} chunks/s"
    return (
        f"{progress.files_done:,}/{progress.files_total:,} files"
        f" · {progress.chunks_done:,}/{guess.chunks_expected:,} chunks"
        f" ({progress.chunks:,} searchable){rate} · {time_left(guess)}"
    )


class PassProgress:
    """Told each :class:`Progress` of a pass (call it); a context manager that stops the bar
    and prints the last plain line on the way out."""

    def __init__(
        self,
        console: Console,
        *,
        label: str = "indexing",
        transient: bool = False,
        plain: Console | None = None,
        every: float = PLAIN_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``console`` draws the bar when it is a terminal; otherwise lines go to ``plain``
        (stderr by default)."""
        self.label = label
        self.every = every
        self.clock = clock
        self.meter = RateMeter()
        self.live = console.is_terminal
        self.plain = plain if plain is not None else Console(stderr=True, soft_wrap=True)
        self._last: tuple[Progress, Estimate] | None = None
        self._printed_at: float | None = None
        self._printed: Progress | None = None
        # Imported here: rich.progress is a tenth of the command line's start (`--help`).
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        self._bar = Bar(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[text]}"),
            TimeElapsedColumn(),
            console=console,
            transient=transient,
        )
        self._task = self._bar.add_task(label.capitalize(), total=None, text="", start=False)

    def __call__(self, step: Progress) -> None:
        if self._last is not None and step.elapsed < self._last[0].elapsed:
            self.meter = RateMeter()  # the next base's pass (sync): its own rate
        guess = self.meter.add(step)
        self._last = (step, guess)
        if self.live:
            if not self._bar.live.is_started:  # drawn from the first report on
                self._bar.start()
                self._bar.start_task(self._task)
            self._bar.update(
                self._task,
                completed=step.chunks_done,
                total=max(guess.chunks_expected, 1),
                text=compact(step, guess),
            )
            return
        now = self.clock()
        if self._printed_at is None or now - self._printed_at >= self.every:
            self._print(step, guess)
            self._printed_at = now

    def _print(self, step: Progress, guess: Estimate) -> None:
        self.plain.print(Text(f"{self.label}: {describe(step, guess)}"), highlight=False)
        self._printed = step

    def __enter__(self) -> PassProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.live:
            self._bar.stop()
        if not self.live and self._last is not None and self._printed is not self._last[0]:
            self._print(*self._last)
