"""`lorebase notes add|list|show|edit|versions|delete`: short texts written straight into a
base, searchable at once."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.errors import InvalidInput

if TYPE_CHECKING:
    from lorebase.service import DocumentRecord, KnowledgeBase, Lorebase

app = command_group("Notes: short texts written straight into a knowledge base.")

ID_HELP = "The note's id, or its first characters (at least 6; `notes list` shows 12)."
TEXT_HELP = "The note's text; omit it (or give -) to read it from standard input."
TITLE_HELP = "A short title (default: the start of the text's first line)."


def _text(given: str | None) -> str:
    """The text given, else standard input (given as ``-``, or not given and not a
    terminal)."""
    if given is not None and given != "-":
        return given
    if given is None and sys.stdin.isatty():
        raise InvalidInput("give the note's text as an argument, or pipe it in (or give -)")
    return sys.stdin.read()


def _note_json(
    lb: Lorebase, kb: KnowledgeBase, note: DocumentRecord, *, text: bool = True
) -> dict[str, Any]:
    title, body = lb.note_content(note)
    return {
        "id": note.id,
        "knowledge_base": kb.name,
        "title": title,
        **({"text": body} if text else {}),
        "state": note.state.value,
        "chunks": note.chunk_count,
        "updated_at": note.updated_at,
    }


def _note(lb: Lorebase, note_id: str) -> tuple[KnowledgeBase, DocumentRecord]:
    """A note by id or prefix (``InvalidInput`` for another document)."""
    from lorebase.service.notes import NOT_A_NOTE, is_note

    kb, document = lb.find_document(note_id)
    if not is_note(document):
        raise InvalidInput(NOT_A_NOTE)
    return kb, document


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    kb: Annotated[str, typer.Argument(help="The knowledge base to write into.")],
    text: Annotated[str | None, typer.Argument(help=TEXT_HELP, show_default=False)] = None,
    title: Annotated[str | None, typer.Option("--title", help=TITLE_HELP)] = None,
    as_json: JsonOption = False,
) -> None:
    """Write a note into a knowledge base, searchable when this returns."""
    body = _text(text)
    with open_from(ctx, create=False) as lb:
        base = lb.kb(kb, totals=False)
        note, created = lb.add_note(base, body, title)
        payload = _note_json(lb, base, note, text=False) | {"created": created}
    if as_json:
        render.print_json(Console(), payload)
        return
    said = "wrote" if created else "already there:"
    Console().print(
        Text(f"{said} note {note.id[:12]} ({payload['title']}) in {base.name}, {note.state}")
    )


@app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    kb: Annotated[str, typer.Argument(help="The knowledge base.")],
    as_json: JsonOption = False,
) -> None:
    """List a knowledge base's notes, the last changed last."""
    with open_from(ctx, create=False) as lb:
        base = lb.kb(kb, totals=False)
        notes = [_note_json(lb, base, note, text=False) for note in lb.notes(base)]
    out = render.console()
    if as_json:
        render.print_json(out, notes)
        return
    if not notes:
        out.print(Text(f"No notes in {base.name}: `lorebase notes add {base.name} TEXT`."))
        return
    table = Table(title=f"Notes in {base.name}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("id", "title", "state", "chunks"):
        table.add_column(column, overflow="fold" if column == "title" else "ellipsis")
    for note in notes:
        table.add_row(note["id"][:12], Text(note["title"]), note["state"], str(note["chunks"]))
    out.print(table)


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    note_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Print a note's title and text."""
    with open_from(ctx, create=False) as lb:
        kb, note = _note(lb, note_id)
        payload = _note_json(lb, kb, note)
    if as_json:
        render.print_json(Console(), payload)
        return
    Console().print(Text(payload["title"], style="bold"))
    typer.echo(payload["text"])


@app.command("edit")
@handles_errors
def edit(
    ctx: typer.Context,
    note_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    text: Annotated[
        str | None,
        typer.Argument(
            help="The new text; - reads it from standard input; omit it to keep the text "
            "(and change the --title).",
            show_default=False,
        ),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="A new title.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a note's text and/or title; the previous ones are kept as a version."""
    if text is None and title is None:
        raise InvalidInput(
            "give the note's new text (- reads it from standard input), --title, or both"
        )
    body = None if text is None else _text(text)
    with open_from(ctx, create=False) as lb:
        kb, note = _note(lb, note_id)
        edited = lb.edit_note(kb, note, body, title)
        versions = len(lb.note_versions(kb, edited))
        payload = _note_json(lb, kb, edited, text=False) | {"versions": versions}
    if as_json:
        render.print_json(Console(), payload)
        return
    Console().print(
        Text(f"edited note {edited.id[:12]} ({payload['title']}); {versions} earlier versions kept")
    )


@app.command("versions")
@handles_errors
def versions(
    ctx: typer.Context,
    note_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """List the earlier versions of a note (what each edit replaced), oldest first."""
    with open_from(ctx, create=False) as lb:
        kb, note = _note(lb, note_id)
        kept = lb.note_versions(kb, note)
    payload: list[dict[str, Any]] = [
        {
            "version": v.version,
            "title": v.title,
            "text": v.text,
            "author": v.author,
            "replaced_at": v.created_at,
        }
        for v in kept
    ]
    out = render.console()
    if as_json:
        render.print_json(out, payload)
        return
    if not kept:
        out.print(Text("No earlier versions: the note was never edited."))
        return
    for version in payload:
        by = f" by {version['author']}" if version["author"] else ""
        out.print(Text(f"version {version['version']}{by}: {version['title']}", style="bold"))
        out.print(Text(version["text"]))


@app.command("delete")
@handles_errors
def delete(
    ctx: typer.Context,
    note_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a note and its versions."""
    with open_from(ctx, create=False) as lb:
        kb, note = _note(lb, note_id)
        if not yes:
            typer.confirm(f"Delete note {note.id[:12]} from {kb.name}?", abort=True)
        lb.delete_document(kb, note)
    if as_json:
        render.print_json(Console(), {"deleted": note.id, "knowledge_base": kb.name})
        return
    Console().print(Text(f"deleted note {note.id[:12]} from {kb.name}"))
