"""`lorebase extract` and `lorebase chunk`: look at what a file or folder turns into."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, fail
from lorebase.errors import LorebaseError, NotFound
from lorebase.settings import MB, ChunkSettings, ExtractSettings

if TYPE_CHECKING:  # the readers load when a command runs, not for --help
    from lorebase.inspect import FileReport

PathArgument = Annotated[
    Path, typer.Argument(help="A file or a folder (hidden files and folders are skipped).")
]
MaxMbOption = Annotated[
    int, typer.Option("--max-file-mb", min=1, help="Files larger than this are left out.")
]


def extract(
    path: PathArgument,
    as_json: JsonOption = False,
    max_file_mb: MaxMbOption = 64,
) -> None:
    """Show the structural elements (headings, paragraphs, tables, code…) of a file,
    or a summary per kind with failures and their reasons for a folder."""
    _inspect(path, ExtractSettings(max_file_bytes=max_file_mb * MB), None, as_json)


def chunk(
    path: PathArgument,
    as_json: JsonOption = False,
    chunk_size: Annotated[
        int, typer.Option(min=200, max=4000, help="Most characters in one chunk.")
    ] = 1200,
    max_tokens: Annotated[
        int, typer.Option(min=32, max=8192, help="Most estimated tokens in one chunk.")
    ] = 320,
    overlap: Annotated[
        int, typer.Option(min=0, help="Characters repeated from the previous chunk.")
    ] = 200,
    max_file_mb: MaxMbOption = 64,
) -> None:
    """Show the chunks (with heading trail, lines/pages and token estimate) of a file,
    or a summary per kind with failures and their reasons for a folder."""
    try:
        settings = ChunkSettings(chunk_size=chunk_size, max_tokens=max_tokens, overlap=overlap)
    except LorebaseError as error:
        fail(error)
    _inspect(path, ExtractSettings(max_file_bytes=max_file_mb * MB), settings, as_json)


def _inspect(
    path: Path,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings | None,
    as_json: bool,
) -> None:
    console = Console()
    if not path.exists():
        fail(NotFound(f"{path} does not exist; check the path and try again"))
    if path.is_dir():
        _inspect_folder(console, path, extract_settings, chunk_settings, as_json)
        return
    from lorebase.inspect import inspect_file

    report = inspect_file(path, Path(path.name), extract_settings, chunk_settings)
    if as_json:
        render.print_json(console, render.report_json(report, full=True))
    elif report.failure is None:
        if report.chunks is not None:
            console.print(render.chunks_table(report.chunks, path.name))
        elif report.extracted is not None:
            console.print(render.elements_table(report.extracted, path.name))
    if report.failure is not None:
        if not as_json:
            message = Text(f"{path.name}: {report.failure}")
            Console(stderr=True).print(message, soft_wrap=True)
        raise typer.Exit(1)


def _inspect_folder(
    console: Console,
    root: Path,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings | None,
    as_json: bool,
) -> None:
    from lorebase.inspect import Summary, inspect_folder

    summary = Summary()
    failures: list[FileReport] = []
    files: list[dict[str, object]] = []
    with console.status("Reading files…", spinner="dots") as status:
        for count, report in enumerate(
            inspect_folder(root, extract_settings, chunk_settings, summary), start=1
        ):
            status.update(f"Reading files… {count}")
            if report.failure is not None and report.failure.reason.value != "unsupported_format":
                failures.append(report)
            if as_json:
                files.append(render.report_json(report, full=False))
    if as_json:
        render.print_json(console, {"files": files, "summary": render.summary_json(summary)})
        return
    for table in render.summary_tables(summary, failures):
        console.print(table)
