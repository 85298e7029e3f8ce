"""`lorebase docs list`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.errors import reason_hint
from lorebase.service import DocumentState

app = command_group("Documents in a knowledge base.")


@app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    kb: Annotated[
        str | None, typer.Option("--kb", help="The knowledge base (default: every one).")
    ] = None,
    state: Annotated[
        DocumentState | None, typer.Option("--state", help="Only documents in this state.")
    ] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Same as --state failed.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List documents with state, chunks and failure reason (what to do about it)."""
    wanted = DocumentState.FAILED if failed else state
    with open_from(ctx, create=False) as lb:
        bases = [kb] if kb else [base.name for base in lb.knowledge_bases(totals=False)]
        listed = [(base, doc) for base in bases for doc in lb.documents(base, wanted)]
        payload = [render.document_json(lb, doc) for _, doc in listed] if as_json else []
        names = [lb.display_name(doc) for _, doc in listed]
    out = render.console()
    if as_json:
        render.print_json(out, payload)
        return
    where = f"in {kb}" if kb else "in any knowledge base"
    if not listed:
        which = f"{wanted.value} documents" if wanted else "documents"
        out.print(Text(f"No {which} {where}."))
        return
    # The path takes what the short columns leave; on a terminal a long one folds inside its
    # own column (elsewhere lines are not cut).
    title = f"Documents {where}" if kb else "Documents"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    if not kb:
        table.add_column("knowledge base", overflow="fold")
    table.add_column("path", overflow="fold", ratio=1 if out.is_terminal else None)
    for column in ("state", "chunks", "reason"):
        table.add_column(column, no_wrap=True, justify="right" if column == "chunks" else "left")
    hints = any(doc.reason for _, doc in listed)
    if hints:
        table.add_column("what to do", overflow="fold")
    for (base, doc), name in zip(listed, names, strict=True):
        row = [doc.id[:12], *([] if kb else [Text(base)]), Text(name), doc.state.value,
               str(doc.chunk_count), doc.reason or ""]  # fmt: skip
        if hints:
            row.append(reason_hint(doc.reason) if doc.reason else "")
        table.add_row(*row)
    out.print(table)
