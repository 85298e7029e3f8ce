"""`lorebase docs list`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.service import DocumentState

app = command_group("Documents in a knowledge base.")


@app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    kb: Annotated[str, typer.Option("--kb", help="The knowledge base.")] = "default",
    state: Annotated[
        DocumentState | None, typer.Option("--state", help="Only documents in this state.")
    ] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Same as --state failed.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List a knowledge base's documents with state, chunks and failure reason."""
    with open_from(ctx) as lb:
        docs = lb.documents(kb, DocumentState.FAILED if failed else state)
    if as_json:
        render.print_json(Console(), render.to_jsonable(docs))
        return
    # The path takes what the short columns leave; a long one folds inside its own column.
    table = Table(title=f"Documents in {kb}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("path", overflow="fold", ratio=1)
    for column in ("state", "chunks", "reason"):
        table.add_column(column, no_wrap=True, justify="right" if column == "chunks" else "left")
    for doc in docs:
        table.add_row(doc.id[:12], Text(doc.path), doc.state.value, str(doc.chunk_count),
                      doc.reason or "")  # fmt: skip
    Console().print(table)
