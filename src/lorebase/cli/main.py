"""The ``lorebase`` command line. Thin: it parses options, calls a service and renders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lorebase import __version__
from lorebase.cli import (
    agents,
    audit,
    documents,
    embedders,
    evaluate,
    index,
    inspection,
    knowledge_bases,
    maintenance,
    notes,
    own_keys,
    passes,
    portable,
    serving,
    sharing,
    usage,
)
from lorebase.cli.common import CliContext, command_group
from lorebase.settings import EMBEDDERS, RERANKERS

app = command_group(
    "A local-first knowledge base with hybrid retrieval and cited answers.",
    name="lorebase",
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lorebase {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="LOREBASE_HOME",
            help="Where the index lives (default: the per-user data directory).",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            envvar="LOREBASE_EMBEDDER",
            help=f"Which embedder to use: {', '.join(EMBEDDERS)} (default onnx, the local "
            "bundled model).",
        ),
    ] = None,
    reranker: Annotated[
        str | None,
        typer.Option(
            "--reranker",
            envvar="LOREBASE_RERANKER",
            help=f"Which reranker `search --rerank` uses: {', '.join(RERANKERS)} (default "
            "none; http needs LOREBASE_RERANK_URL and LOREBASE_RERANK_MODEL).",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="LOREBASE_STORE",
            show_envvar=True,
            help="A postgresql:// URL to keep the knowledge bases in, shared by every lorebase "
            "process that names it (default: the SQLite file in the data directory).",
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """A local-first knowledge base with hybrid retrieval and cited answers."""
    ctx.obj = CliContext(data_dir=data_dir, embedder=embedder, reranker=reranker, store_url=store)


app.command()(inspection.extract)
app.command()(inspection.chunk)
app.command()(index.add)
app.command()(index.search)
app.command()(index.status)
app.command()(passes.sync)
app.command()(passes.watch)
app.command()(maintenance.check)
app.command()(maintenance.vacuum)
app.command()(maintenance.backup)
app.command()(maintenance.restore)
app.command()(portable.export)
app.command("import")(portable.import_)
app.command("eval")(evaluate.evaluate)
app.command()(audit.audit)
app.command()(usage.usage)
app.command()(serving.serve)
app.command()(serving.worker)
knowledge_bases.app.command()(sharing.share)
knowledge_bases.app.command()(sharing.unshare)
knowledge_bases.app.command()(sharing.grants)
app.add_typer(knowledge_bases.app, name="kb")
app.command()(embedders.embedders)
app.add_typer(serving.users_app, name="users")
app.add_typer(serving.teams_app, name="teams")
app.add_typer(serving.keys_app, name="keys")
app.add_typer(own_keys.app, name="embedder-keys")
app.add_typer(documents.app, name="docs")
app.add_typer(notes.app, name="notes")
app.command()(agents.mcp)
app.command()(agents.ask)
app.add_typer(agents.profile_app, name="profile")


def main() -> None:
    app()
