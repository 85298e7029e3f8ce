"""Progress a person can plan with: the rate, the chunks expected and the time left are pure
functions of a pass's reports; the CLI shows them as a bar or as plain lines."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from lorebase.cli.progress import PassProgress, compact
from lorebase.ingest.progress import (
    MIN_SPAN_S,
    RATE_WINDOW_S,
    Estimate,
    RateMeter,
    describe,
    duration,
    estimate,
    expected_chunks,
    recent_rate,
    time_left,
)
from lorebase.ingest.report import Progress


def step(
    done: int,
    elapsed: float,
    *,
    files: tuple[int, int] = (10, 10),
    total: int = 1000,
    written: int = 1000,
    read: int | None = None,
) -> Progress:
    return Progress(
        files_done=files[0],
        files_total=files[1],
        chunks=written,
        chunks_done=done,
        chunks_total=total,
        elapsed=elapsed,
        files_read=files[0] if read is None else read,
    )


def test_no_rate_until_there_is_something_to_measure() -> None:
    assert recent_rate([]) is None
    assert recent_rate([(0.0, 0)]) is None
    assert recent_rate([(0.0, 0), (MIN_SPAN_S / 2, 50)]) is None  # a burst, not a rate
    assert recent_rate([(0.0, 10), (10.0, 10)]) is None  # nothing done: no rate
    assert recent_rate([(0.0, 0), (4.0, 100)]) == 25.0


def test_the_rate_is_the_recent_one() -> None:
    """Fast at first (reused vectors), then the model's pace: the estimate follows the pace."""
    samples = [(0.0, 0), (5.0, 1000), (40.0, 1100), (70.0, 1400)]
    assert recent_rate(samples, window=30.0) == pytest.approx(300 / 30)
    assert recent_rate(samples, window=1000.0) == pytest.approx(1400 / 70)


def test_chunks_of_unread_files_are_estimated_from_the_read_ones() -> None:
    assert expected_chunks(step(0, 1, files=(4, 10), total=40)) == 100
    # Files skipped unchanged count as done but were not read: the read ones set the pace.
    assert expected_chunks(step(0, 1, files=(6, 10), total=40, read=2)) == 40 + 80
    assert expected_chunks(step(0, 1, files=(10, 10), total=40)) == 40
    assert expected_chunks(step(0, 1, files=(3, 10), total=0, read=0)) == 0


def test_time_left_from_chunks_remaining_over_the_rate() -> None:
    assert estimate(step(200, 10.0), 20.0) == Estimate(20.0, 1000, 40.0)
    assert estimate(step(200, 10.0), None) == Estimate(None, 1000, None)
    assert estimate(step(1000, 10.0), None).seconds_left == 0.0  # done needs no rate
    assert time_left(estimate(step(1000, 10.0), None)) == "finishing"
    assert time_left(estimate(step(200, 10.0), None)) == "estimating time left"
    assert time_left(estimate(step(200, 10.0), 20.0)) == "about 40 s left"


@given(st.lists(st.tuples(st.floats(0.01, 100.0), st.integers(0, 500)), min_size=1, max_size=50))
def test_the_meter_never_promises_negative_or_undefined_times(
    increments: list[tuple[float, int]],
) -> None:
    meter = RateMeter()
    elapsed, done = 0.0, 0
    for seconds, chunks in increments:
        elapsed, done = elapsed + seconds, done + chunks
        guess = meter.add(step(done, elapsed, total=max(done, 1) * 2))
        assert guess.rate is None or guess.rate > 0
        assert guess.seconds_left is None or guess.seconds_left >= 0
        assert (guess.rate is None) == (guess.seconds_left is None)
        assert len(meter._samples) <= 2 + len(increments)


def test_the_meter_forgets_reports_older_than_its_window() -> None:
    meter = RateMeter()
    for second in range(200):
        meter.add(step(second * 10, float(second)))
    assert len(meter._samples) <= RATE_WINDOW_S + 2
    assert meter.add(step(2000, 200.0)).rate == pytest.approx(10.0)


def test_durations_read_as_a_person_plans() -> None:
    assert [duration(s) for s in (0, 44.6, 60, 185, 3600, 7830)] == [
        "0 s",
        "45 s",
        "1 min 00 s",
        "3 min 05 s",
        "1 h 00 min",
        "2 h 10 min",
    ]


def test_a_line_says_files_chunks_rate_and_time_left() -> None:
    early = step(812, 30.0, files=(120, 240), total=975, written=975)
    line = describe(early, estimate(early, None))
    assert line == (
        "120/240 files · 812/1,950 chunks done · 975 searchable by keyword · "
        "estimating time left · 30 s elapsed"
    )
    guess = estimate(step(812, 30.0, files=(120, 240), total=975), 45.0)
    assert "· 45.0 chunks/s · about 25 s left ·" in describe(step(812, 30.0), guess)
    assert compact(step(812, 30.0), guess).endswith("45 chunks/s · about 25 s left")


def test_without_a_terminal_a_plain_line_every_few_seconds_and_one_at_the_end() -> None:
    now = {"t": 0.0}
    out = io.StringIO()
    plain = Console(file=out, width=300)
    terminal = Console(file=io.StringIO(), force_terminal=False)
    with PassProgress(terminal, plain=plain, every=5.0, clock=lambda: now["t"]) as shown:
        for second in range(12):
            now["t"] = float(second)
            shown(step(second * 10, float(second)))
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # at 0 s, 5 s, 10 s, and the last report (11 s)
    assert all(line.startswith("indexing: ") for line in lines)
    assert lines[0].endswith("estimating time left · 0 s elapsed")
    assert "10.0 chunks/s" in lines[-1] and lines[-1].endswith("11 s elapsed")
    assert "\x1b" not in out.getvalue()  # no escape codes in a log


def test_nothing_is_printed_when_the_pass_never_reported() -> None:
    out = io.StringIO()
    with PassProgress(Console(file=io.StringIO()), plain=Console(file=out)):
        pass
    assert out.getvalue() == ""


def test_on_a_terminal_the_bar_is_drawn_and_no_plain_line() -> None:
    drawn, out = io.StringIO(), io.StringIO()
    terminal = Console(file=drawn, force_terminal=True, width=160)
    with PassProgress(terminal, plain=Console(file=out)) as shown:
        shown(step(10, 1.0))
        shown(step(500, 5.0))
    assert out.getvalue() == ""
    assert "500/1,000 chunks" in drawn.getvalue()
