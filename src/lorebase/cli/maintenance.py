"""`lorebase check`, `vacuum`, `backup` and `restore`: keep a data directory sound and small,
copy it while it serves, and put a copy back."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from, settings_from
from lorebase.errors import DamagedDatabase, LorebaseError

if TYPE_CHECKING:
    from lorebase.service.maintenance import CheckReport, Finding


def _finding_json(finding: Finding, names: dict[int, str]) -> dict[str, Any]:
    return {
        "area": finding.area.value,
        "kb": names.get(finding.kb_id) if finding.kb_id is not None else None,
        "kb_id": finding.kb_id,
        "document_id": finding.document_id,
        "problem": finding.problem,
        "repairable": finding.repairable,
    }


def _where(finding: Finding, names: dict[int, str]) -> str:
    if finding.kb_id is None:
        return finding.area.value.replace("_", " ")
    base = names.get(finding.kb_id, f"#{finding.kb_id}")
    return f"{finding.area.value.replace('_', ' ')} of base {base}"


def _print_check(report: CheckReport, repair: bool) -> None:
    console = render.console()
    names = report.names
    if report.repaired:
        rebuilt = ", ".join(names.get(k, f"#{k}") for k in report.repaired)
        console.print(Text(f"repaired: rebuilt the derived indexes of {rebuilt}"))
    if report.ok:
        console.print(Text("ok: the database, the indexes and the uploads' originals are sound"))
        return
    console.print(Text(f"{len(report.remaining)} problem(s):"))
    for finding in report.remaining:
        console.print(Text(f"  {_where(finding, names)}: {finding.problem}"))
    if not repair and any(f.repairable for f in report.remaining):
        console.print(Text("`lorebase check --repair` rebuilds the derived indexes found wanting"))


@handles_errors
def check(
    ctx: typer.Context,
    kb: Annotated[
        list[str] | None,
        typer.Option("--kb", help="Only this knowledge base (repeatable; default: all)."),
    ] = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Rebuild the derived indexes (keyword index, ANN graphs) found wanting, from "
            "the database, under the ingestion lock (refused while another process indexes).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Verify the data directory: the database's integrity, each base's keyword index
    (its files' checksums, its document count, a sample of terms), its vectors (count,
    identity, dimension) and every upload's sealed original. Exits 1 naming what is wrong
    and where (base, document id); --repair rebuilds the derived indexes and exits 0 when
    all is well after."""
    try:
        with open_from(ctx, "lorebase check", create=False) as lb:
            kb_ids = None if not kb else [lb.kb(name).id for name in kb]
            report = lb.check(kb_ids, repair=repair)
    except DamagedDatabase as error:
        _damaged(str(error), as_json)
        raise typer.Exit(1) from None
    except LorebaseError:
        raise
    except Exception as error:  # what a damaged file raises past the checks: a report too
        _damaged(f"the check could not finish ({type(error).__name__}: {error})", as_json)
        raise typer.Exit(1) from None
    if as_json:
        render.print_json(
            render.console(),
            {
                "ok": report.ok,
                "findings": [_finding_json(f, report.names) for f in report.findings],
                "repaired": [report.names.get(k, k) for k in report.repaired],
                "remaining": [_finding_json(f, report.names) for f in report.remaining],
            },
        )
    else:
        _print_check(report, repair)
    if not report.ok:
        raise typer.Exit(1)


def _damaged(problem: str, as_json: bool) -> None:
    """A database too damaged to open, reported as a check's finding."""
    finding = {
        "area": "database",
        "kb": None,
        "kb_id": None,
        "document_id": None,
        "problem": problem,
        "repairable": False,
    }
    if as_json:
        payload = {"ok": False, "findings": [finding], "repaired": [], "remaining": [finding]}
        render.print_json(render.console(), payload)
        return
    render.console().print(Text(f"1 problem(s):\n  database: {problem}"))


@handles_errors
def vacuum(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Give back the space deletes left behind: SQLite's VACUUM and the keyword indexes
    holding deleted chunks rebuilt (PostgreSQL: a plain VACUUM, and what to run to shrink
    its files). Takes the ingestion lock; prints the bytes before and after."""
    with open_from(ctx, "lorebase vacuum", create=False) as lb:
        done = lb.vacuum()
    if as_json:
        render.print_json(
            render.console(),
            {
                "before_bytes": done.before_bytes,
                "after_bytes": done.after_bytes,
                "steps": list(done.steps),
                "advice": done.advice,
            },
        )
        return
    console = render.console()
    for step in done.steps:
        console.print(Text(step))
    if done.before_bytes is not None and done.after_bytes is not None:
        given = done.before_bytes - done.after_bytes
        console.print(
            Text(
                f"{done.before_bytes:,} bytes before, {done.after_bytes:,} after "
                f"({given:,} given back)"
            )
        )
    if done.advice:
        console.print(Text(done.advice))


@handles_errors
def backup(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="A new or empty folder to write the backup into.")],
    no_key: Annotated[
        bool,
        typer.Option(
            "--no-key",
            help="Leave the data key file out (keep it apart; a restore then needs it put "
            "back by hand, or LOREBASE_DATA_KEY).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Copy the data directory, consistent as of one moment, into a new or empty folder,
    while `lorebase serve` reads and writes: the database (SQLite's online backup), a
    snapshot of the keyword indexes and ANN graphs, the uploads' sealed originals, the
    settings files, the data key file (unless --no-key) and a manifest of every file with
    its size and SHA-256. A PostgreSQL store is refused, with the pg_dump advice."""
    with open_from(ctx, "lorebase backup", create=False) as lb:
        made = lb.backup(folder, key=not no_key)
    if as_json:
        render.print_json(
            render.console(),
            {
                "folder": str(made.folder),
                "files": made.files,
                "bytes": made.bytes,
                "indexes": made.indexes,
                "data_key": made.key,
                "seconds": round(made.seconds, 3),
            },
        )
        return
    console = render.console()
    console.print(
        Text(
            f"backed up into {made.folder}: {made.files} files, {made.bytes:,} bytes, in "
            f"{made.seconds:.1f} s"
            + ("" if made.indexes else " (indexes left out: rebuilt when first used)")
        )
    )
    console.print(Text(f"data key: {made.key}"))


@handles_errors
def restore(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="A folder `lorebase backup` wrote.")],
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            "--force",
            help="Put the backup in place of a data directory that holds data (its model "
            "cache is kept).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Put a backup back as the data directory (--data-dir): its manifest is verified
    first (every file's size and SHA-256), it is refused while a process (a server, a pass)
    holds the directory's ingestion lock, and refused over a directory with data in it
    unless --replace; it is copied into a folder beside the target and renamed into
    place."""
    settings = settings_from(ctx)
    from lorebase.service import Lorebase  # the store's code: when the command runs

    done = Lorebase.restore(folder, settings, replace=replace)
    if as_json:
        render.print_json(
            render.console(),
            {
                "data_dir": str(done.data_dir),
                "files": done.files,
                "bytes": done.bytes,
                "replaced": done.replaced,
                "data_key": done.key,
            },
        )
        return
    console = render.console()
    console.print(Text(f"restored {done.files} files ({done.bytes:,} bytes) into {done.data_dir}"))
    console.print(Text(f"data key: {done.key}"))
