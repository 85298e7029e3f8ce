"""`lorebase audit`: the changes made to this lorebase, who made them, when and from where."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.since import SINCE_FORMS, parse_since

MAX_ENTRIES = 100_000


@handles_errors
def audit(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option("--since", help=f"Only changes from then on: {SINCE_FORMS}.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_ENTRIES, help="The newest this many.")
    ] = 100,
    as_json: JsonOption = False,
) -> None:
    """Show the audit log: every change (bases, documents, notes, sharing, keys, accounts).

    Each entry says when, who (a user, or `cli`), what (ids, never content) and from where
    (the client's address, or `cli`), newest first."""
    start = parse_since(since) if since is not None else None
    with open_from(ctx, create=False) as lb:
        entries = lb.audit_log(since=start, limit=limit)
    out = render.console()
    if as_json:
        render.print_json(out, [render.to_jsonable(e) for e in entries])
        return
    if not entries:
        out.print(Text("No changes recorded" + (" since then." if since else ".")))
        return
    table = Table(title="Audit log (newest first)", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("when (UTC)", "who", "what", "on", "from"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        when = dt.datetime.fromtimestamp(entry.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(
            when, Text(entry.actor), entry.action, Text(entry.target), Text(entry.client or "")
        )
    out.print(table)
