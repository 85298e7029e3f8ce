"""`lorebase export KB FILE` and `lorebase import FILE`: one base to a portable file and back.

The passphrase that seals uploads' originals is read from a file (``--key-file``) or from
``LOREBASE_EXPORT_KEY``, never from an argument (it would show in the process list and the
shell's history), and is never printed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.errors import InvalidInput
from lorebase.settings import EXPORT_KEY_ENV as KEY_ENV

KeyFileOption = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        help=f"A file holding the passphrase that seals uploads' originals (else {KEY_ENV}).",
        dir_okay=False,
    ),
]


def _passphrase(key_file: Path | None) -> str | None:
    """The passphrase of ``--key-file`` (its first line), else of the environment."""
    if key_file is not None:
        try:
            text = key_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise InvalidInput(
                f"the key file {key_file} cannot be read; give a readable UTF-8 text file"
            ) from None
        first = text.splitlines()[0] if text.strip() else ""
        if not first:
            raise InvalidInput(f"the key file {key_file} is empty; write the passphrase in it")
        return first
    return os.environ.get(KEY_ENV) or None


@handles_errors
def export(
    ctx: typer.Context,
    kb: Annotated[str, typer.Argument(help="The knowledge base to export.")],
    file: Annotated[Path, typer.Argument(help="The file to write (replaced once written).")],
    no_originals: Annotated[
        bool,
        typer.Option("--no-originals", help="Leave the uploads' originals out (no key needed)."),
    ] = False,
    key_file: KeyFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write one knowledge base to a portable file: documents, chunks, vectors with their
    identity, metadata and settings, and the uploads' originals sealed under a passphrase
    (or left out with --no-originals). `lorebase import` reads it into any data directory or
    PostgreSQL store."""
    key = _passphrase(key_file)
    with open_from(ctx, create=False) as lb:
        summary = lb.export_kb(kb, file, key=key, originals=not no_originals)
    out = Console()
    if as_json:
        render.print_json(
            out,
            {
                "knowledge_base": summary.kb_name,
                "id": summary.kb_id,
                "file": str(file),
                "bytes": summary.bytes,
                "documents": summary.documents,
                "chunks": summary.chunks,
                "vectors": summary.vectors,
                "uploads": summary.uploads,
                "originals": summary.originals,
                "seconds": round(summary.seconds, 3),
            },
        )
        return
    left = summary.uploads - summary.originals
    out.print(
        Text(
            f"exported {summary.kb_name}: {summary.documents} documents, {summary.chunks} "
            f"chunks, {summary.vectors} vectors, {summary.originals} originals"
            + (f" ({left} uploads without their original)" if left else "")
            + f" → {file} ({summary.bytes:,} bytes)"
        )
    )


@handles_errors
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The export to read.", dir_okay=False)],
    kb: Annotated[
        str | None, typer.Option("--kb", help="Import under this name (default: the export's).")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a base of that name (all of it goes).")
    ] = False,
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed",
            help="Leave out vectors of an embedder not configured here; the next sync embeds.",
        ),
    ] = False,
    key_file: KeyFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read an export into a new knowledge base: every member is checked against the
    manifest first, then it is written all or nothing (a damaged file imports nothing)."""
    if not file.is_file():
        raise InvalidInput(f"{file} is not a file; give the path of an export")
    key = _passphrase(key_file)
    with open_from(ctx) as lb:
        summary = lb.import_kb(file, name=kb, replace=replace, reembed=reembed, key=key)
    out = Console()
    base = summary.kb
    if as_json:
        render.print_json(
            out,
            {
                "knowledge_base": base.name,
                "id": base.id,
                "documents": summary.documents,
                "chunks": summary.chunks,
                "vectors": summary.vectors,
                "originals": summary.originals,
                "renumbered": summary.renumbered,
                "replaced": summary.replaced,
                "reembed": summary.reembed,
                "seconds": round(summary.seconds, 3),
            },
        )
        return
    out.print(
        Text(
            f"imported {base.name} (id {base.id}): {summary.documents} documents, "
            f"{summary.chunks} chunks, {summary.vectors} vectors, {summary.originals} originals"
            + (f"; {summary.renumbered} documents got new ids" if summary.renumbered else "")
            + ("; it replaced the base of that name" if summary.replaced else "")
        )
    )
    if summary.reembed:
        out.print(Text(f"its vectors were left out: run `lorebase sync --kb {base.name}`"))
