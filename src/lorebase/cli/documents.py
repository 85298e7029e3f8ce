"""`lorebase docs list|show|read|chunks|delete|tag|untag`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.errors import reason_hint
from lorebase.service import DocumentState, SourceKind
from lorebase.settings import ChunkSettings

if TYPE_CHECKING:
    from lorebase.service import DocumentRecord, KnowledgeBase, Lorebase

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
        row = [
            doc.id[:12],
            *([] if kb else [Text(base)]),
            Text(name),
            doc.state.value,
            str(doc.chunk_count),
            doc.reason or "",
        ]
        if hints:
            row.append(reason_hint(doc.reason) if doc.reason else "")
        table.add_row(*row)
    out.print(table)


# -- one document: show, read, delete (beside `list`) ------------------------------------------

ID_HELP = "The document's id, or its first characters (at least 6; `docs list` shows 12)."
MAX_READ_CHARS = 100_000  # as GET /v1/documents/{id}/text


def _record(lb: Lorebase, kb: KnowledgeBase, doc: DocumentRecord) -> dict[str, Any]:
    """What `docs show` tells: the API's document fields, its base and where it comes from."""
    source = lb.source_of(kb, doc)
    origin = lb.origin(kb, doc)
    if doc.uploaded:
        comes_from = "upload"
    elif source is not None:
        comes_from = source.kind.value
    else:
        comes_from = "added by path (not followed; add it again to follow it)"
    return {
        "id": doc.id,
        "knowledge_base": kb.name,
        "name": lb.display_name(doc),
        "path": doc.path,
        "kind": doc.kind,
        "size": doc.size,
        "state": doc.state.value,
        "reason": doc.reason,
        "chunks": doc.chunk_count,
        "title": doc.title,
        "page_count": doc.page_count,
        "updated_at": doc.updated_at,
        "comes_from": comes_from,
        "source": source.label if source is not None else None,
        "file": origin.as_posix() if origin is not None else None,
        "fields": lb.fields_of(kb, doc),
    }


@app.command("show")
@handles_errors
def show(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Show a document's record: name, kind, size, state, failure reason, chunks, title,
    pages, its knowledge base and where it comes from (folder, file or upload)."""
    with open_from(ctx) as lb:
        kb, doc = lb.find_document(document_id)
        record = _record(lb, kb, doc)
    if as_json:
        render.print_json(Console(), record)
        return
    table = Table(box=None, show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in record.items():
        if value is not None and key not in ("updated_at", "fields"):
            table.add_row(key.replace("_", " "), Text(str(value)))
    for name, values in record["fields"].items():
        if name not in ("title", "kind"):  # shown above
            table.add_row(name, Text(", ".join(values)))
    Console().print(table)


@app.command("read")
@handles_errors
def read(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    start: Annotated[
        int, typer.Option("--start", min=0, help="First character to show (chunk offsets).")
    ] = 0,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=1, max=MAX_READ_CHARS, help="Most characters.")
    ] = 20_000,
    as_json: JsonOption = False,
) -> None:
    """Print a window of a document's extracted text (what search and agents read)."""
    with open_from(ctx) as lb:
        kb, doc = lb.find_document(document_id)
        text = lb.text(kb, doc.id)
    window = text[start : start + max_chars]
    if as_json:
        render.print_json(
            Console(),
            {"document_id": doc.id, "start": start, "text": window, "total_chars": len(text)},
        )
        return
    typer.echo(window, nl=not window.endswith("\n"))
    if start + max_chars < len(text):
        Console(stderr=True).print(
            Text(
                f"… {len(text) - start - max_chars} more characters; "
                f"--start {start + max_chars} reads on",
                style="dim",
            )
        )


@app.command("delete")
@handles_errors
def delete(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a document from the index (an upload's encrypted original too; a file followed
    on its own is no longer followed; the file itself is never touched)."""
    with open_from(ctx) as lb:
        kb, doc = lb.find_document(document_id)
        name = lb.display_name(doc)
        if not yes:
            typer.confirm(f"Delete {name!r} ({doc.id[:12]}) from {kb.name}?", abort=True)
        source = lb.source_of(kb, doc)
        lb.delete_document(kb, doc)
    if as_json:
        render.print_json(Console(), {"deleted": doc.id, "knowledge_base": kb.name})
        return
    Console().print(Text(f"deleted {name} from {kb.name}"))
    if source is not None and source.kind is SourceKind.FOLDER:
        Console().print(
            Text(
                "its folder still holds the file: the next sync indexes it again "
                "unless it is deleted there",
                style="yellow",
            )
        )


TAGS_HELP = "Tags (a tag may hold spaces when quoted)."


@app.command("tag")
@handles_errors
def tag(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    tags: Annotated[list[str], typer.Argument(help=TAGS_HELP, show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Tag a document: `lorebase search --filter tags=TAG` finds it at once. Tags you set stay
    when its file is read again; its own tags (front matter, keywords) stay as the file has
    them."""
    _tagged(ctx, document_id, add=tags, remove=[], as_json=as_json)


@app.command("untag")
@handles_errors
def untag(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    tags: Annotated[list[str], typer.Argument(help=TAGS_HELP, show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Remove tags you set on a document (a tag its file gives is changed in the file)."""
    _tagged(ctx, document_id, add=[], remove=tags, as_json=as_json)


def _tagged(
    ctx: typer.Context, document_id: str, *, add: list[str], remove: list[str], as_json: bool
) -> None:
    with open_from(ctx) as lb:
        kb, doc = lb.find_document(document_id)
        lb.tag_document(kb, doc, add=add, remove=remove)
        every = lb.fields_of(kb, doc).get("tags", [])
        name = lb.display_name(doc)
    if as_json:
        render.print_json(Console(), {"id": doc.id, "knowledge_base": kb.name, "tags": every})
        return
    shown = ", ".join(every) if every else "none"
    Console().print(Text(f"{name} ({doc.id[:12]}) in {kb.name}: tags {shown}"))


@app.command("chunks")
@handles_errors
def chunks(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help=ID_HELP, show_default=False)],
    start: Annotated[int, typer.Option(min=0, help="The first chunk (its ordinal).")] = 0,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Chunks to show.")] = 50,
    chunk_size: Annotated[
        int | None,
        typer.Option(min=200, max=4000, help="Preview: most characters in one chunk."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=32, max=8192, help="Preview: most estimated tokens in one chunk."),
    ] = None,
    overlap: Annotated[
        int | None, typer.Option(min=0, help="Preview: characters repeated from the last chunk.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a document's chunks as the index holds them: heading trail, page or line, kind,
    language, tokens, whether they have vectors, and a preview of each. With --chunk-size,
    --max-tokens or --overlap, show instead what its chunks would be with those settings
    (read again from its file; nothing is stored): apply them to the whole base with
    `lorebase kb update KB --chunk-size …`."""
    with open_from(ctx) as lb:
        kb, doc = lb.find_document(document_id)
        name = lb.display_name(doc)
        if chunk_size is None and max_tokens is None and overlap is None:
            held = lb.chunks_of(kb, doc.id, start, limit)
            embedded = doc.identity_key is not None and doc.identity_key == kb.identity_key
            preview = None
        else:
            now = kb.chunk_settings
            wanted = ChunkSettings(
                chunk_size=chunk_size if chunk_size is not None else now.chunk_size,
                max_tokens=max_tokens if max_tokens is not None else now.max_tokens,
                overlap=overlap if overlap is not None else now.overlap,
            )
            preview = lb.rechunk_preview(kb, doc, wanted)
    console = Console()
    if preview is not None:
        shown = preview[start : start + limit]
        if as_json:
            payload = {
                "id": doc.id,
                "chunks_now": doc.chunk_count,
                "chunks_with_settings": len(preview),
                "chunk_settings": dataclasses.asdict(wanted),
                "chunks": render.to_jsonable(shown),
            }
            render.print_json(console, payload)
            return
        console.print(render.chunks_table(shown, name))
        console.print(
            Text(
                f"{doc.chunk_count} chunks now; {len(preview)} with chunk size "
                f"{wanted.chunk_size}, {wanted.max_tokens} tokens, overlap {wanted.overlap} "
                f"(nothing stored: `lorebase kb update {kb.name} --chunk-size …` applies "
                "settings to the whole base)",
                style="dim",
            )
        )
        return
    if as_json:
        render.print_json(
            console,
            {
                "id": doc.id,
                "chunks_now": doc.chunk_count,
                "chunks": [render.stored_chunk_json(c, embedded) for c in held],
            },
        )
        return
    console.print(render.stored_chunks_table(held, name, embedded))
    if start + len(held) < doc.chunk_count:
        console.print(
            Text(f"{doc.chunk_count} chunks in all; --start {start + len(held)} shows more")
        )
