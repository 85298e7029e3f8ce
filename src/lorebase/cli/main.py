"""The ``lorebase`` command line. Thin: it parses options, calls a service and renders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from lorebase import __version__
from lorebase.cli import render
from lorebase.errors import (
    Conflict,
    InvalidInput,
    LorebaseError,
    NotFound,
    Unavailable,
    Unsupported,
)
from lorebase.inspect import FileReport, Summary, inspect_file, inspect_folder
from lorebase.settings import MB, ChunkSettings, ExtractSettings

T = TypeVar("T")

app = typer.Typer(
    name="lorebase",
    help="A local-first knowledge base with hybrid retrieval and cited answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Exit codes per error class (see lorebase.errors); 1 is "finished, but something failed".
EXIT_CODES: dict[type[LorebaseError], int] = {
    InvalidInput: 2,
    NotFound: 3,
    Conflict: 4,
    Unsupported: 5,
    Unavailable: 6,
}

PathArgument = Annotated[
    Path, typer.Argument(help="A file or a folder (hidden files and folders are skipped).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
MaxMbOption = Annotated[
    int, typer.Option("--max-file-mb", min=1, help="Files larger than this are left out.")
]


def exit_code_for(error: LorebaseError) -> int:
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lorebase {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """A local-first knowledge base with hybrid retrieval and cited answers."""


@app.command()
def extract(
    path: PathArgument,
    as_json: JsonOption = False,
    max_file_mb: MaxMbOption = 64,
) -> None:
    """Show the structural elements (headings, paragraphs, tables, code…) of a file,
    or a summary per kind with failures and their reasons for a folder."""
    _inspect(path, ExtractSettings(max_file_bytes=max_file_mb * MB), None, as_json)


@app.command()
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
    settings = _or_exit(
        lambda: ChunkSettings(chunk_size=chunk_size, max_tokens=max_tokens, overlap=overlap)
    )
    _inspect(path, ExtractSettings(max_file_bytes=max_file_mb * MB), settings, as_json)


def _inspect(
    path: Path,
    extract_settings: ExtractSettings,
    chunk_settings: ChunkSettings | None,
    as_json: bool,
) -> None:
    console = Console()
    if not path.exists():
        _fail(
            Console(stderr=True),
            NotFound(f"{path} does not exist; check the path and try again"),
        )
    if path.is_dir():
        _inspect_folder(console, path, extract_settings, chunk_settings, as_json)
        return
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


def _or_exit(build: Callable[[], T]) -> T:
    try:
        return build()
    except LorebaseError as error:
        _fail(Console(stderr=True), error)


def _fail(console: Console, error: LorebaseError) -> NoReturn:
    console.print(Text(f"error: {error}"), soft_wrap=True)
    raise typer.Exit(exit_code_for(error))


def main() -> None:
    app()
