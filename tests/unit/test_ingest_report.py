"""A pass cut short carries the error that stopped it to the edge, as raised."""

from __future__ import annotations

from lorebase.errors import Conflict, Unavailable
from lorebase.ingest.report import STOP_REQUESTED, IngestReport


def test_the_error_that_stopped_a_pass_reaches_the_surface_as_raised() -> None:
    report = IngestReport()
    gone = Unavailable("the embedder does not answer")
    report.stop(gone)
    report.stop(Conflict("a later reason"))  # the first reason is kept
    assert report.stopped == "the embedder does not answer"
    assert report.cut_short() is gone


def test_a_stop_asked_for_is_not_an_error() -> None:
    report = IngestReport(stopped=STOP_REQUESTED)
    assert report.cut_short() is None
    assert IngestReport().cut_short() is None


def test_a_reason_without_its_error_is_unavailable() -> None:
    error = IngestReport(stopped="the server went away").cut_short()
    assert isinstance(error, Unavailable) and str(error) == "the server went away"


def test_merging_keeps_the_first_error() -> None:
    first, second = IngestReport(), IngestReport()
    second.stop(Unavailable("down"))
    first.merge(second)
    assert first.cut_short() is second.error
