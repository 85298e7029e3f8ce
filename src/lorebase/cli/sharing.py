"""`lorebase kb share|unshare|grants`: a team base shared with another team or a user."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from

if TYPE_CHECKING:
    from lorebase.service.sharing import SharedGrant

KbArgument = Annotated[str, typer.Argument(help="The team's knowledge base (name or id).")]
TeamOption = Annotated[
    str | None, typer.Option("--team", help="The team to share it with (`lorebase teams list`).")
]
UserOption = Annotated[
    str | None, typer.Option("--user", help="The user to share it with (`lorebase users list`).")
]


def grant_json(shared: SharedGrant) -> dict[str, Any]:
    """A grant with the API's field names."""
    grant = shared.grant
    return {
        "id": grant.id,
        "knowledge_base_id": grant.kb_id,
        "grantee": grant.grantee.value,
        "name": shared.name,
        "access": grant.access.value,
        "granted_by": grant.granted_by,
        "created_at": grant.created_at,
    }


@handles_errors
def share(
    ctx: typer.Context,
    kb: KbArgument,
    team: TeamOption = None,
    user: UserOption = None,
    write: Annotated[
        bool, typer.Option("--write", help="Let them change its documents too (default: read).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Share a team's knowledge base with another team or a user, read-only or read-write.

    The grantees see it in their listings, searches and profiles (with its team named) from
    their next request; sharing again with the same team or user changes the access."""
    with open_from(ctx, create=False) as lb:
        shared = lb.share_kb(lb.kb(kb, totals=False), team=team, user=user, write=write)
    if as_json:
        render.print_json(Console(), grant_json(shared))
        return
    grant = shared.grant
    Console().print(
        Text(f"shared {kb} with {grant.grantee.value} {shared.name} ({grant.access.value})")
    )


@handles_errors
def unshare(
    ctx: typer.Context,
    kb: KbArgument,
    team: TeamOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop sharing a knowledge base with a team or a user, at once."""
    with open_from(ctx, create=False) as lb:
        shared = lb.unshare_kb(lb.kb(kb, totals=False), team=team, user=user)
    if as_json:
        render.print_json(Console(), grant_json(shared))
        return
    Console().print(
        Text(f"{kb} is no longer shared with {shared.grant.grantee.value} {shared.name}")
    )


@handles_errors
def grants(ctx: typer.Context, kb: KbArgument, as_json: JsonOption = False) -> None:
    """List whom a knowledge base is shared with, and how."""
    with open_from(ctx, create=False) as lb:
        found = lb.grants(lb.kb(kb, totals=False))
    out = render.console()
    if as_json:
        render.print_json(out, [grant_json(g) for g in found])
        return
    if not found:
        out.print(Text(f"{kb} is not shared: `lorebase kb share {kb} --team TEAM`."))
        return
    table = Table(title=f"{kb} is shared with", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("grantee", "name", "access", "granted by"):
        table.add_column(column)
    for shared in found:
        grant = shared.grant
        table.add_row(
            grant.grantee.value, Text(shared.name), grant.access.value, grant.granted_by or ""
        )
    out.print(table)
