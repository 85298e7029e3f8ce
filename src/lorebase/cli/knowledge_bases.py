"""`lorebase kb list|create|delete`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.settings import ChunkSettings
from lorebase.store.base import Scope

app = typer.Typer(help="Create, list and delete knowledge bases.", no_args_is_help=True)


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List knowledge bases with their totals."""
    with open_from(ctx) as lb:
        kbs = lb.knowledge_bases()
    if as_json:
        render.print_json(Console(), render.to_jsonable(kbs))
        return
    table = Table(title="Knowledge bases", title_justify="left")
    for column in ("name", "description", "scope", "documents", "chunks"):
        table.add_column(column)
    for kb in kbs:
        table.add_row(Text(kb.name), Text(kb.description), kb.scope.value, str(kb.documents),
                      str(kb.chunks))  # fmt: skip
    Console().print(table)


@app.command()
@handles_errors
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A unique name.")],
    description: Annotated[str, typer.Option(help="What it holds.")] = "",
    scope: Annotated[Scope, typer.Option(help="global, team or personal.")] = Scope.PERSONAL,
    chunk_size: Annotated[int, typer.Option(help="Most characters in one chunk.")] = 1200,
    overlap: Annotated[int, typer.Option(help="Characters repeated between chunks.")] = 200,
) -> None:
    """Create a knowledge base."""
    settings = ChunkSettings(chunk_size=chunk_size, overlap=overlap)
    with open_from(ctx) as lb:
        kb = lb.create_kb(name, description=description, scope=scope, chunk_settings=settings)
    Console().print(Text(f"created knowledge base {kb.name}"))


@app.command()
@handles_errors
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base to delete.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a knowledge base and everything indexed in it (source files are untouched)."""
    if not yes:
        typer.confirm(f"Delete knowledge base {name!r} and its index?", abort=True)
    with open_from(ctx) as lb:
        lb.delete_kb(name)
    Console().print(Text(f"deleted knowledge base {name}"))
