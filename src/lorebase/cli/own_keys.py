"""`lorebase embedder-keys set|list|remove`: a user's own API key for an HTTP embedder."""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, command_group, handles_errors, open_from
from lorebase.errors import InvalidInput

if TYPE_CHECKING:
    from lorebase.accounts.access import Caller
    from lorebase.service import Lorebase

app = command_group("A user's own API keys for HTTP embedders, used by their personal bases.")

UserOption = Annotated[str, typer.Option("--user", help="Whose key (`lorebase users list`).")]
EmbedderArgument = Annotated[
    str, typer.Argument(help="A named HTTP embedder (`lorebase embedders` lists them).")
]


def _caller(lb: Lorebase, user: str) -> Caller:
    """The user as the service takes a caller (``NotFound`` for one that does not exist)."""
    from lorebase.accounts.access import Caller

    return Caller(lb.accounts.get_user(user))


@app.command("set")
@handles_errors
def set_(
    ctx: typer.Context, embedder: EmbedderArgument, user: UserOption, as_json: JsonOption = False
) -> None:
    """Keep a user's own key for an HTTP embedder, read from standard input.

    Their personal bases made with that embedder are embedded and searched with it from now
    on. The key is sealed with the data key, never printed, never logged; give it on standard
    input (a prompt that does not echo on a terminal), never as an argument."""
    key = (
        typer.prompt("API key", hide_input=True) if sys.stdin.isatty() else sys.stdin.readline()
    ).strip()
    if not key:
        raise InvalidInput("give the key on standard input (it is never taken as an argument)")
    with open_from(ctx, create=False) as lb:
        lb.set_embedder_key(_caller(lb, user), embedder, key)
    if as_json:
        render.print_json(Console(), {"user": user, "embedder": embedder, "set": True})
        return
    Console().print(Text(f"{user}'s own key for {embedder} is kept (sealed)"))


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, user: UserOption, as_json: JsonOption = False) -> None:
    """List the embedders a user keeps a key of their own for (never the keys)."""
    with open_from(ctx, create=False) as lb:
        kept = lb.embedder_keys(_caller(lb, user))
    if as_json:
        render.print_json(Console(), [{"embedder": n, "created_at": at} for n, at in kept])
        return
    if not kept:
        Console().print(Text(f"{user} keeps no key of their own."))
        return
    for name, at in kept:
        when = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        Console().print(Text(f"{name} (set {when})"))


@app.command("remove")
@handles_errors
def remove(
    ctx: typer.Context, embedder: EmbedderArgument, user: UserOption, as_json: JsonOption = False
) -> None:
    """Forget a user's own key for an embedder (their bases use the server's again)."""
    with open_from(ctx, create=False) as lb:
        lb.remove_embedder_key(_caller(lb, user), embedder)
    if as_json:
        render.print_json(Console(), {"user": user, "embedder": embedder, "removed": True})
        return
    Console().print(Text(f"{user}'s own key for {embedder} is gone"))
