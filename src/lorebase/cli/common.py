"""What every command shares: the app, options, error handling and opening a lorebase."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup, TyperOption

from lorebase.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LorebaseError,
    NotFound,
    ServerFault,
    Unauthorized,
    Unavailable,
    Unsupported,
    resolve,
)
from lorebase.settings import Settings

if TYPE_CHECKING:
    from lorebase.service import Lorebase
    from lorebase.settings import ServeSettings

T = TypeVar("T")

# Exit codes per error class, resolved along the MRO (see lorebase.errors). 1 is also
# "finished, but something failed" (a command that reports failures it carried on past).
EXIT_CODES: dict[type[LorebaseError], int] = {
    LorebaseError: 1,
    InvalidInput: 2,
    NotFound: 3,
    Conflict: 4,
    Unsupported: 5,
    Unavailable: 6,
    ServerFault: 7,
    Unauthorized: 8,
    Forbidden: 8,
}

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _untyped_flags(command: Any, ctx: Any) -> None:
    """Typer's help shows a type after every option, ``<bool>`` even after a flag, which
    takes no value: an empty metavar shows nothing there. (Typer's click is its own copy,
    hence ``Any`` for its commands and contexts.)"""
    for param in (*command.params, command.get_help_option(ctx)):
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""


class FlagsGroup(TyperGroup):
    """A command group whose help, and its commands' help, shows flags without a type."""

    def get_params(self, ctx: Any) -> Any:
        _untyped_flags(self, ctx)
        return super().get_params(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, TyperGroup):
            _untyped_flags(command, ctx)
        return command


def command_group(help: str, **options: Any) -> typer.Typer:
    """A group of commands that shows its help when called without one.

    Typer keeps the line breaks of a command's first docstring paragraph in the command
    list, so each command's docstring starts with a one-line summary (checked by a test)."""
    return typer.Typer(
        help=help, no_args_is_help=True, rich_markup_mode="markdown", cls=FlagsGroup, **options
    )


KbOption = Annotated[
    str, typer.Option("--kb", help="The knowledge base (created by `add` if needed).")
]


@dataclass(frozen=True, slots=True)
class CliContext:
    data_dir: Path | None
    embedder: str | None
    reranker: str | None = None
    store_url: str | None = field(default=None, repr=False)  # may hold a password


def exit_code_for(error: LorebaseError) -> int:
    return resolve(EXIT_CODES, error)


def fail(error: LorebaseError) -> NoReturn:
    """Print a lorebase error for people and exit with its code."""
    Console(stderr=True).print(Text(f"error: {error}"), soft_wrap=True)
    raise typer.Exit(exit_code_for(error))


def handles_errors(command: Callable[..., T]) -> Callable[..., T]:
    """Turn lorebase errors raised by a command into a message and an exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return command(*args, **kwargs)
        except LorebaseError as error:
            fail(error)

    return wrapper


def settings_from(ctx: typer.Context, serve: ServeSettings | None = None) -> Settings:
    """The settings the global options and the environment give (``serve``: how `serve` or
    `worker` runs). The options are passed as values and win over the environment (see
    :meth:`Settings.from_env`)."""
    options: CliContext = ctx.find_root().obj
    settings = Settings.from_env(
        options.data_dir,
        embedder=options.embedder,
        reranker=options.reranker,
        store_url=options.store_url,
    )
    return dataclasses.replace(settings, serve=serve) if serve is not None else settings


def open_from(
    ctx: typer.Context,
    holder: str = "lorebase",
    serve: ServeSettings | None = None,
    *,
    create: bool = True,
    settings: Settings | None = None,
) -> Lorebase:
    """Open the lorebase the global options point at (``serve``: how `serve` runs it;
    ``settings``: ones :func:`settings_from` already built). ``create=False`` for a command
    that only reads: where there is no lorebase it says so, naming the data directory, and
    creates nothing."""
    from lorebase.app import open_lorebase

    if settings is None:
        settings = settings_from(ctx, serve)
    if not create and not settings.shared_store and not settings.database.exists():
        raise NotFound(no_lorebase_message(settings.data_dir, Path.cwd()))
    return open_lorebase(settings=settings, holder=holder, create=create)


LOCAL_DATA_DIR = ".lorebase"  # where `make run` indexes


def no_lorebase_message(data_dir: Path, cwd: Path) -> str:
    """Where a read-only command looked, and where else to look."""
    message = (
        f"nothing is indexed in {data_dir.absolute()} (no lorebase there yet): add files with "
        "`lorebase add PATH`, or point at another data directory with --data-dir or "
        "LOREBASE_HOME"
    )
    local = cwd / LOCAL_DATA_DIR
    if (local / "lorebase.db").is_file() and local.resolve() != data_dir.resolve():
        message += f"; this folder has one: `lorebase --data-dir {LOCAL_DATA_DIR} ...`"
    return message
