"""`lorebase usage`: what model calls cost, per base, user, model and role."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.since import SINCE_FORMS, parse_since
from lorebase.usage import usage_json


@handles_errors
def usage(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option("--since", help=f"Only calls from then on: {SINCE_FORMS}.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show what model calls cost: texts, estimated tokens and seconds per base and user.

    Every embedding call (passes, queries, re-embeds) and chat call (`ask`) is counted by hour
    per knowledge base, user, model and role; this sums them since a date (default: all)."""
    start = parse_since(since) if since is not None else None
    with open_from(ctx, create=False) as lb:
        names = {kb.id: kb.name for kb in lb.knowledge_bases(totals=False)}
        rows = usage_json(lb.usage(since=start), names)
    out = render.console()
    if as_json:
        render.print_json(out, rows)
        return
    if not rows:
        out.print(Text("No model calls counted" + (" since then." if since else ".")))
        return
    table = Table(title="Model calls", title_justify="left", box=box.SIMPLE_HEAD)
    for column in (
        "knowledge base",
        "user",
        "model",
        "role",
        "calls",
        "texts",
        "tokens",
        "seconds",
    ):
        numeric = column in ("calls", "texts", "tokens", "seconds")
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for row in rows:
        base = row["knowledge_base"] or ("(several)" if row["knowledge_base_id"] is None else "")
        table.add_row(
            Text(base or f"(deleted {row['knowledge_base_id']})"),
            Text(row["user"] or "-"),
            Text(row["model"]),
            row["role"],
            str(row["calls"]),
            str(row["texts"]),
            str(row["tokens"]),
            f"{row['seconds']:.2f}",
        )
    out.print(table)
