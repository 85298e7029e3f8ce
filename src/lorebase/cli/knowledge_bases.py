"""`lorebase kb list|create|delete`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.cli.passes import graceful_stop
from lorebase.cli.progress import PassProgress
from lorebase.errors import Conflict, InvalidInput
from lorebase.service import Scope
from lorebase.service.names import describe_scope
from lorebase.settings import ChunkSettings

if TYPE_CHECKING:
    from lorebase.service import Source

ChunkSizeOption = Annotated[
    int | None, typer.Option(help="Most characters in one chunk (default: the settings').")
]
MaxTokensOption = Annotated[int | None, typer.Option(help="Most estimated tokens in one chunk.")]
OverlapOption = Annotated[int | None, typer.Option(help="Characters repeated between chunks.")]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="A named embedder (`lorebase embedders` lists them; default: the default one).",
    ),
]

app = command_group("Create, list and delete knowledge bases.")


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List knowledge bases with their totals and embedders."""
    with open_from(ctx, create=False) as lb:
        kbs = lb.knowledge_bases()
        reach = {kb.id: lb.embedder_reachability(kb) for kb in kbs}
        stale = lb.stale_documents([kb.id for kb in kbs]) if kbs else {}
    out = render.console()
    if as_json:
        listed = [render.kb_json(kb, reach[kb.id], stale=stale.get(kb.id, 0)) for kb in kbs]
        render.print_json(out, listed)
        return
    if not kbs:
        out.print(Text("No knowledge bases yet: add files with `lorebase add PATH`."))
        return
    table = Table(title="Knowledge bases", title_justify="left")
    for column in ("id", "name", "description", "scope", "documents", "chunks", "embedder"):
        table.add_column(column)
    for kb in kbs:
        # A name is unique only within a scope: the id and the owner or team tell them apart.
        table.add_row(
            str(kb.id),
            Text(kb.name),
            Text(kb.description),
            Text(describe_scope(kb)),
            str(kb.documents),
            str(kb.chunks),
            Text(render.embedder_label(kb)),
        )
    out.print(table)


@app.command()
@handles_errors
def create(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="A name unique among the bases of its scope and owner.")
    ],
    description: Annotated[str, typer.Option(help="What it holds.")] = "",
    scope: Annotated[Scope, typer.Option(help="global, team or personal.")] = Scope.PERSONAL,
    chunk_size: ChunkSizeOption = None,
    max_tokens: MaxTokensOption = None,
    overlap: OverlapOption = None,
    source: Annotated[
        list[Path] | None,
        typer.Option("--source", help="A folder to follow (repeatable, at most 16)."),
    ] = None,
    embedder: EmbedderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a knowledge base, optionally following folders (index them with `sync`). Its
    embedder is chosen now and kept: only `kb update --embedder NAME --reembed` changes it."""
    with open_from(ctx) as lb:
        settings = _chunking(lb.settings.chunk, chunk_size, max_tokens, overlap)
        kb = lb.create_kb(
            name,
            description=description,
            scope=scope,
            chunk_settings=settings,
            sources=source or (),
            embedder=embedder,
        )
    if as_json:
        render.print_json(render.console(), render.kb_json(kb))
        return
    Console().print(
        Text(
            f"created knowledge base {kb.name} (id {kb.id}), embedded with "
            f"{render.embedder_label(kb)}"
        )
    )


@app.command()
@handles_errors
def update(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base.")],
    chunk_size: ChunkSizeOption = None,
    max_tokens: MaxTokensOption = None,
    overlap: OverlapOption = None,
    embedder: EmbedderOption = None,
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed",
            help="With --embedder: make every document's vectors with it now (searches keep "
            "the current vectors until all are made, then switch at once).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Change a knowledge base's chunking (what is not given stays as it is; the next `sync`
    re-chunks every document, reusing the vectors of unchanged chunks), or move it to another
    embedder with `--embedder NAME --reembed`: the re-embed runs here with progress (Ctrl-C
    stops it; the next `sync` or the same command goes on from where it stopped)."""
    if (embedder is None) != (not reembed):
        raise InvalidInput(
            "changing a base's embedder re-embeds every document: give both --embedder NAME "
            "and --reembed"
        )
    chunking = (chunk_size, max_tokens, overlap) != (None, None, None)
    if chunking or embedder is None:
        with open_from(ctx) as lb:
            current = lb.kb(name, totals=False).chunk_settings
            lb.update_kb(name, _chunking(current, chunk_size, max_tokens, overlap))
            after = lb.kb(name, totals=False)
        if embedder is None:
            if as_json:
                render.print_json(render.console(), {"knowledge_base": render.kb_json(after)})
                return
            Console().print(Text(f"updated {name}; run `lorebase sync --kb {name}` to apply"))
            return
    assert embedder is not None
    _reembed(ctx, name, embedder, as_json)


def _reembed(ctx: typer.Context, name: str, embedder: str, as_json: bool) -> None:
    """Record the move, then run the pass that makes the vectors here, with progress; when
    another process holds the ingestion lock (a server), it does them with its next pass."""
    console = render.console()
    with open_from(ctx, holder="lorebase kb update") as lb:
        kb = lb.reembed_kb(name, embedder)
        if not as_json:
            console.print(
                Text(
                    f"re-embedding {kb.name} with {embedder}; until it is done searches use "
                    "its current vectors"
                )
            )
        try:
            with (
                PassProgress(render.console(stderr=True), label="re-embedding") as shown,
                graceful_stop() as stop,
            ):
                reports = lb.sync(kb, stop=stop, on_progress=shown)
        except Conflict:
            console.print(
                Text(
                    f"another lorebase process is indexing now: it re-embeds {kb.name} with "
                    "its next pass over the base (or run this again later)"
                )
            )
            return
        after = lb.kb_by_id(kb.id)
        stale = lb.stale_documents([after.id]).get(after.id, 0)
    report = reports.get(kb.name)
    if as_json:
        payload = render.to_jsonable(report) if report is not None else {}
        render.print_json(console, payload | {"knowledge_base": render.kb_json(after, stale=stale)})
        return
    if report is not None:
        console.print(render.ingest_summary(report, kb.name))
    label = render.embedder_label(after)
    if after.embedder_next is None:
        console.print(Text(f"{kb.name} now answers with {label}"))
        return
    why = report.stopped if report is not None and report.stopped else "documents wait"
    console.print(
        Text(
            f"{kb.name} still answers with its current vectors ({label}; {why}); run "
            f"`lorebase kb update {kb.name} --embedder {after.embedder_next} --reembed` or "
            "`lorebase sync` to go on"
        )
    )
    if report is not None and (error := report.cut_short()) is not None:
        raise error


def _chunking(
    base: ChunkSettings, chunk_size: int | None, max_tokens: int | None, overlap: int | None
) -> ChunkSettings:
    """``base`` with what the options give (ChunkSettings checks the bounds)."""
    given = {"chunk_size": chunk_size, "max_tokens": max_tokens, "overlap": overlap}
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


sources_app = command_group("Folders (and files added on their own) a knowledge base follows.")
app.add_typer(sources_app, name="sources")


@sources_app.command("list")
@handles_errors
def sources_list(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base.")],
    as_json: JsonOption = False,
) -> None:
    """List the folders and files a knowledge base follows: label, path, and kind (`folder`,
    or `file` for a file added on its own)."""
    with open_from(ctx, create=False) as lb:
        sources = lb.sources(name)
    if as_json:
        render.print_json(render.console(), [render.source_json(s) for s in sources])
        return
    render.print_lines(
        sources,
        False,
        _source_line,
        header="label\tpath\tkind",
        empty=f"{name} follows no folder or file.",
    )


def _source_line(source: Source) -> str:
    return f"{source.label}\t{source.path}\t{source.kind.value}"


@sources_app.command("add")
@handles_errors
def sources_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base.")],
    folder: Annotated[Path, typer.Argument(help="The folder to follow.")],
    as_json: JsonOption = False,
) -> None:
    """Follow another folder (not inside, nor containing, one already followed)."""
    with open_from(ctx) as lb:
        source = lb.add_source(name, folder)
    if as_json:
        render.print_json(render.console(), render.source_json(source))
        return
    Console().print(
        Text(f"{name} now follows {source.path} as {source.label}; run `lorebase sync --kb {name}`")
    )


@sources_app.command("remove")
@handles_errors
def sources_remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base.")],
    folder: Annotated[str, typer.Argument(help="The folder or file (its path or label).")],
    as_json: JsonOption = False,
) -> None:
    """Stop following a folder or file; its documents leave the index (the files stay)."""
    with open_from(ctx) as lb:
        dropped = lb.remove_source(name, folder)
    if as_json:
        render.print_json(render.console(), {"removed": folder, "documents_dropped": dropped})
        return
    Console().print(Text(f"stopped following {folder}; {dropped} documents dropped"))


@app.command()
@handles_errors
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The knowledge base to delete.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a knowledge base and everything indexed in it (source files are untouched)."""
    if not yes:
        typer.confirm(f"Delete knowledge base {name!r} and its index?", abort=True, err=as_json)
    with open_from(ctx) as lb:
        lb.delete_kb(name)
    if as_json:
        render.print_json(render.console(), {"deleted": name})
        return
    Console().print(Text(f"deleted knowledge base {name}"))
