"""`lorebase sync` and `lorebase watch`: keep knowledge bases in step with their folders.

The first SIGINT/SIGTERM asks the pass to stop after the current document (documents already
read, and found by keyword, get their vectors while a short drain window lasts; the rest stay
pending for next time);
a second one stops at once — the database stays consistent either way.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.cli.progress import PassProgress
from lorebase.ingest.watch import DEFAULT_RESCAN_SECONDS

if TYPE_CHECKING:
    from lorebase.ingest.report import IngestReport
    from lorebase.service import KnowledgeBase


@contextmanager
def graceful_stop() -> Iterator[threading.Event]:
    """An event set by the first SIGINT/SIGTERM; the second one interrupts for real."""
    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        Console(stderr=True).print(
            Text("stopping after the current document (press again to stop now)…")
        )

    if threading.current_thread() is threading.main_thread():
        for sig in previous:
            signal.signal(sig, on_signal)
    try:
        yield stop
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@handles_errors
def sync(
    ctx: typer.Context,
    kb: Annotated[
        str | None, typer.Option("--kb", help="Only this knowledge base (default: all).")
    ] = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="Read every file (no size+mtime shortcut), retry failed ones."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Bring knowledge bases up to date with their folders: new and changed files are
    indexed (searchable by keyword as soon as they are read, by vector once embedded), files
    that are gone are dropped, unchanged files are not read. Progress as `lorebase add`
    shows it."""
    console = render.console()
    with (
        PassProgress(render.console(stderr=as_json), label="syncing", transient=as_json) as shown,
        open_from(ctx, holder="lorebase sync") as lb,
        graceful_stop() as stop,
    ):
        reports = lb.sync(kb, full=full, stop=stop, on_progress=shown)
    if as_json:
        render.print_json(console, render.to_jsonable(reports))
    else:
        for name, report in reports.items():
            console.print(render.ingest_summary(report, name))
            if report.failed:
                console.print(render.failures_table(report.failed))
        if not reports:
            console.print("No knowledge base follows a folder yet: `lorebase add FOLDER`.")
    errors = [error for r in reports.values() if (error := r.cut_short()) is not None]
    if errors:
        raise errors[0]


@handles_errors
def watch(
    ctx: typer.Context,
    kb: Annotated[
        str | None, typer.Option("--kb", help="Only this knowledge base (default: all).")
    ] = None,
    rescan_seconds: Annotated[
        float, typer.Option("--rescan-seconds", min=1, help="Full rescan interval.")
    ] = DEFAULT_RESCAN_SECONDS,
) -> None:
    """Follow the folders of knowledge bases: a pass on start, on file changes, and every
    rescan interval; waits and retries with backoff while the embedder is unavailable.
    Stop with Ctrl-C."""
    console = Console()

    def on_report(base: KnowledgeBase, report: IngestReport) -> None:
        if report.added or report.updated or report.removed or report.failed or report.stopped:
            console.print(render.ingest_summary(report, base.name))
            if report.stopped:
                console.print(Text(f"waiting: {report.stopped}", style="yellow"))

    with open_from(ctx, holder="lorebase watch") as lb, graceful_stop() as stop:
        console.print(Text(f"watching {kb or 'every knowledge base'}; Ctrl-C to stop"))
        lb.watch(kb, stop=stop, rescan_seconds=rescan_seconds, on_report=on_report)
