"""`lorebase add`, `lorebase search` and `lorebase status`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.cli.passes import graceful_stop
from lorebase.cli.progress import PassProgress
from lorebase.search.bounds import MAX_TOP_K, Mode
from lorebase.service import KbState

KB_HELP = "The knowledge base to add to (created if needed)."
DEFER_HELP = (
    "Leave files over this many KB that the base does not hold yet for the next pass "
    "(`lorebase sync`, or `add` without this option): a quick first look at a big folder."
)


@handles_errors
def add(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to index.")],
    kb: Annotated[str, typer.Option("--kb", help=KB_HELP)] = "default",
    defer_over_kb: Annotated[
        int | None, typer.Option("--defer-over-kb", min=1, metavar="KB", help=DEFER_HELP)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Index files and folders into a knowledge base: extract, chunk, store, embed. Each
    document is searchable by keyword as soon as it is read, by vector once embedded.
    Unchanged files are skipped; failures are listed with their reasons. Progress (files and
    chunks done, chunks per second, time left) is a bar on a terminal, otherwise a line on
    stderr every 5 seconds."""
    console = render.console(stderr=as_json)
    # The bar is drawn from the first progress report on: an error found before any file is
    # read (a missing path, another process indexing) is printed alone.
    with (
        PassProgress(console, transient=as_json) as on_progress,
        open_from(ctx, holder="lorebase add") as lb,
        graceful_stop() as stop,
    ):
        # Beside a server that is indexing, wait for its job to end (an idle one holds nothing).
        lb.lock.wait_when_busy(lambda other: console.print(Text(waiting(other))), stop)
        defer = defer_over_kb * 1024 if defer_over_kb else None
        report = lb.add(paths, kb=kb, on_progress=on_progress, stop=stop, defer_larger_than=defer)
        base = lb.kb(kb, totals=False)
    if as_json:
        render.print_json(render.console(), render.to_jsonable(report))
    else:
        console.print(render.ingest_summary(report, kb))
        if report.failed:
            console.print(render.failures_table(report.failed))
        if defer_over_kb and base.state is KbState.PENDING and base.state_reason:
            console.print(Text(base.state_reason))
    if (error := report.cut_short()) is not None:
        raise error


@handles_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in your own words.")],
    kb: Annotated[
        list[str] | None, typer.Option("--kb", help="Knowledge base(s) to search (default all).")
    ] = None,
    mode: Annotated[Mode, typer.Option(help="hybrid, keyword or dense.")] = Mode.HYBRID,
    top_k: Annotated[
        int,
        typer.Option(
            "--top-k",
            min=1,
            max=MAX_TOP_K,
            help="How many documents to show (with --passages: how many passages).",
        ),
    ] = 10,
    passages: Annotated[
        bool,
        typer.Option(
            "--passages",
            help="Every matching passage a hit of its own, instead of one hit per document "
            "(its best passage, with its other matching passages listed under it).",
        ),
    ] = False,
    neighbors: Annotated[
        int, typer.Option(min=0, max=2, help="Also show this many chunks around each hit.")
    ] = 0,
    rerank: Annotated[
        bool,
        typer.Option(
            "--rerank",
            help="Reorder the best max(20, 3 x top-k) candidates (at most 50) with the reranker "
            "(see --reranker); skipped, with a note, when the first hit is clearly ahead; the "
            "fused order is kept when it does not answer within LOREBASE_RERANK_DEADLINE "
            "seconds (default 1).",
        ),
    ] = False,
    path: Annotated[
        str | None,
        typer.Option(
            "--path",
            help="Only documents whose path, as results show it (the folder's name first: "
            "docs/src/), starts with this; case-sensitive.",
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            help="Only source files in this language (python, rust, ...; case-insensitive; "
            "a Markdown page with a fenced example is not one), or documents with passages in "
            "this natural language (de, es, zh: ISO 639-1).",
        ),
    ] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            help="Only documents whose fields meet this, e.g. tags=policy, author=Ann|Bob, "
            "status!=draft, 'date>=2025-01-01' (dates: YYYY, YYYY-MM, YYYY-MM-DD or ISO times); "
            "repeat it: all must hold. Fields: tags, author, title, date, created, modified, "
            "kind and any key of the documents' front matter or properties.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Search knowledge bases: BM25 and vector search fused into one ranking, one hit per
    document (its best passage; its other matching passages listed under it), each with its
    citation (path › headings, page or line), its labelled score and a snippet. A passage
    that matches too little of the question and whose meaning is not close enough (cosine
    under LOREBASE_NO_ANSWER_THRESHOLD, default 0.35) is left out; with none left the search
    says "Nothing relevant found" (exit code 0). --path, --language and --filter narrow the
    candidates before ranking, so a filtered search still fills --top-k when it can."""
    from lorebase.fields import parse_condition
    from lorebase.search.query import SearchRequest

    request = SearchRequest(
        query,
        knowledge_bases=tuple(kb or ()),
        top_k=top_k,
        mode=mode,
        neighbors=neighbors,
        rerank=rerank,
        path_prefix=path,
        language=language,
        collapse=not passages,
        filters=tuple(parse_condition(text) for text in filters or ()),
    )
    with open_from(ctx, create=False) as lb:
        response = lb.search(request)
        payload = render.search_json(lb, response) if as_json else None
    console = render.console()
    if payload is not None:
        render.print_json(console, payload)
        return
    render.print_search(console, response, neighbors)


@handles_errors
def status(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show every knowledge base: state (with the reason when it waits), documents by
    state, chunks, size, progress of a running pass and its time left, last pass, folders,
    the embedder (and whether it answers: a base whose embedder does not is searched by
    keyword only), model, and the documents an older version made (stale: `lorebase sync`
    reads them again)."""
    with open_from(ctx, create=False) as lb:
        kbs = lb.knowledge_bases()
        sources = {kb.name: lb.sources(kb.name) for kb in kbs}
        reach = {kb.id: lb.embedder_reachability(kb) for kb in kbs}
        damaged = lb.damaged_keyword_indexes([kb.id for kb in kbs])
        stale = lb.stale_documents([kb.id for kb in kbs]) if kbs else {}
        reclaimable = lb.reclaimable().total
        data_dir = lb.settings.data_dir
        store = lb.store_location
    if as_json:
        payload = [
            render.kb_json(kb, reach[kb.id], stale=stale.get(kb.id, 0))
            | {
                "progress_done": kb.progress_done,
                "progress_total": kb.progress_total,
                "sources": [render.source_json(s) for s in sources[kb.name]],
            }
            for kb in kbs
        ]
        render.print_json(
            render.console(),
            {
                "data_dir": str(data_dir),
                "store": store,
                "reclaimable_bytes": reclaimable,
                "knowledge_bases": payload,
            },
        )
        return
    console = render.console()
    console.print(Text(f"data directory: {data_dir}"))
    console.print(Text(f"store: {store}"))
    if reclaimable:
        console.print(Text(f"reclaimable: {reclaimable:,} bytes (`lorebase vacuum` frees them)"))
    if not kbs:
        console.print(Text("no knowledge bases yet; add files with `lorebase add PATH`"))
    for block in render.status_blocks(kbs, sources, reach, damaged, stale):
        console.print(block)


def waiting(other: str) -> str:
    """What `add` says while another process indexes this data directory."""
    return (
        f"waiting: {other} is indexing this data directory; these files are read as soon as "
        "it finishes (Ctrl-C stops waiting; searches work meanwhile)"
    )
