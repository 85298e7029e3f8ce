"""`lorebase embedders`: the named embedders a knowledge base can be made with
(``kb create --embedder NAME``), from the embedders file, and whether each answers now."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, settings_from

if TYPE_CHECKING:
    from lorebase.embed.listing import EmbedderRow


@handles_errors
def embedders(
    ctx: typer.Context,
    as_json: JsonOption = False,
    no_check: Annotated[
        bool,
        typer.Option(
            "--no-check", help="Do not probe the embedders (a server that is down can take 2 s)."
        ),
    ] = False,
) -> None:
    """List the named embedders: model, server, dimensions, prefixes and whether each answers.

    They come from the embedders file (LOREBASE_EMBEDDERS, else embedders.toml in the data
    directory); `bundled`, the local model, is always there. The default one (*) is what
    `kb create` gives a new knowledge base. API keys are never shown.
    """
    settings = settings_from(ctx)
    from lorebase.app import build_embedders  # the models' runtime: when the command runs
    from lorebase.embed.listing import list_embedders

    registry = build_embedders(settings)
    try:
        rows = list_embedders(registry, settings.search.no_answer_threshold, check=not no_check)
    finally:
        registry.close()
    console = render.console()
    if as_json:
        render.print_json(console, [dataclasses.asdict(row) for row in rows])
        return
    console.print(_table(rows))
    if not any(row.default for row in rows):
        console.print(Text("no default: new knowledge bases use the process embedder (--embedder)"))


def _table(rows: list[EmbedderRow]) -> Table:
    table = Table("name", "kind", "model", "url", "dims", "prefixes", "floor", "answers")
    for row in rows:
        table.add_row(
            Text(f"{row.name} *" if row.default else row.name),
            row.kind,
            Text(row.model or "—"),
            Text(row.url or "—"),
            _dimensions(row),
            Text(_prefixes(row)),
            f"{row.no_answer_threshold:.2f}",
            Text(_answers(row)),
        )
    return table


def _dimensions(row: EmbedderRow) -> str:
    width = str(row.dimensions) if row.dimensions is not None else "?"
    return f"{width} → {row.truncate}" if row.truncate is not None else width


def _prefixes(row: EmbedderRow) -> str:
    if row.query_prefix is None and row.document_prefix is None:
        return "model's own"
    query, document = (
        repr(prefix) if prefix is not None else "model's own"
        for prefix in (row.query_prefix, row.document_prefix)
    )
    return f"query {query} · document {document}"


def _answers(row: EmbedderRow) -> str:
    if row.reachable is None:
        return "not checked"
    if row.reachable:
        return "yes"
    return f"no: {row.detail}" if row.detail else "no"
