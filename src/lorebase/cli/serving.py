"""`lorebase serve` and the operator commands `users`, `teams`, `keys`."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.accounts.access import OPERATOR
from lorebase.accounts.base import AccountStore, Role
from lorebase.cli import render
from lorebase.cli.common import (
    JsonOption,
    command_group,
    handles_errors,
    open_from,
    settings_from,
)
from lorebase.errors import Conflict, InvalidInput

if TYPE_CHECKING:
    from lorebase.settings import ServeSettings, Settings

users_app = command_group("Users of the HTTP service (operators only).")
teams_app = command_group("Teams and their members.")
keys_app = command_group("API keys and the data key.")

DAY = 86_400


@contextmanager
def administering(ctx: typer.Context, *, create: bool = True) -> Iterator[AccountStore]:
    """The accounts of the lorebase the global options point at, for an operator command
    (``create=False``: one that only reads)."""
    with open_from(ctx, create=create) as lb:
        yield lb.accounts


@handles_errors
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 7700,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="No API keys (allowed on loopback only).")
    ] = False,
    workers: Annotated[int | None, typer.Option(help="Ingestion worker threads.")] = None,
    queue_size: Annotated[int, typer.Option(help="Most uploads waiting at once.")] = 256,
    max_upload_mb: Annotated[int, typer.Option(help="Largest upload, in MB.")] = 64,
    no_ingest: Annotated[
        bool,
        typer.Option(
            "--no-ingest",
            help="Answer requests only; leave indexing to `lorebase worker` processes (a "
            "PostgreSQL store only).",
        ),
    ] = False,
    lease_seconds: Annotated[
        float,
        typer.Option(
            help="With a PostgreSQL store: how long a job stays claimed without this "
            "process's heartbeat."
        ),
    ] = 30.0,
    processes: Annotated[
        int,
        typer.Option(
            "--processes",
            envvar="LOREBASE_SERVE_PROCESSES",
            help="Processes answering requests on the port (searches use that many cores; "
            "each holds its own copy of the model and indexes in memory).",
        ),
    ] = 1,
    indexer_process: Annotated[
        bool,
        typer.Option(
            "--indexer/--no-indexer",
            envvar="LOREBASE_INDEXER",
            help="Over the embedded store, index uploads and follow the folders in a process "
            "of its own at a lower CPU priority, so that searches never wait for indexing "
            "(off: one process fewer, one copy of the model less in memory).",
        ),
    ] = True,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            envvar="LOREBASE_ALLOWED_HOSTS",
            help="A host name clients reach this server by, besides 127.0.0.1, localhost, "
            "[::1] and the address it is bound to (repeatable; * for any, behind a proxy that "
            "checks them). Requests naming another host get 421: a web page cannot reach "
            "this server through a name of its own (DNS rebinding).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the web page (at /) and the REST API (OpenAPI at /docs) on HOST:PORT; it also
    indexes uploads and follows the knowledge bases' folders. The first start creates an admin
    key and prints it once. With a PostgreSQL store any number of `serve` processes may run
    behind a load balancer."""
    from lorebase.api.app import run
    from lorebase.api.processes import needs_siblings, siblings_of
    from lorebase.settings import MB, ServeSettings

    settings = ServeSettings(
        host=host,
        port=port,
        auth=not no_auth,
        max_upload_bytes=max_upload_mb * MB,
        queue_size=queue_size,
        ingest=not no_ingest,
        watch=not no_ingest,
        lease_seconds=lease_seconds,
        allowed_hosts=tuple(name for names in allowed_host or () for name in names.split(",")),
        processes=processes,
        indexer_process=indexer_process,
    )
    if workers:
        settings = dataclasses.replace(settings, workers=workers)
    console = Console()
    chosen = settings_from(ctx, settings).serving()
    _needs_shared_store(chosen, no_ingest, "--no-ingest")
    _check_port(host, port)
    with contextlib.ExitStack() as stack:
        if needs_siblings(chosen):
            chosen = stack.enter_context(siblings_of(chosen))
        lb = stack.enter_context(open_from(ctx, holder="lorebase serve", settings=chosen))
        lb.data_key  # noqa: B018  (a missing or wrong data key stops here, said plainly)
        accounts = lb.accounts
        if settings.auth and not accounts.list_users():
            try:
                admin = accounts.create_user("admin", Role.ADMIN)
            except Conflict:
                pass  # another process sharing the store made it at the same moment
            else:
                key, _ = accounts.create_key(admin.id, "first start")
                console.print(Text("An admin API key was created; it is shown this once:"))
                console.print(Text(key, style="bold"))
        address = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        place = chosen.serve.sibling
        apart = place is not None and place.indexer_apart
        by = f" ({processes} processes)" if processes > 1 else ""
        by += "; indexing in a process of its own" if apart else ""
        console.print(
            Text(
                f"lorebase serving on {address}{by}; open {address}/ in a browser for the "
                "page (API docs at /docs)"
            ),
            soft_wrap=True,
        )
        console.print(Text(answers_to(settings), style="dim"), soft_wrap=True)
        run(lb, host, port)


def answers_to(settings: ServeSettings) -> str:
    """Which host names the server answers to, for its start-up lines."""
    from lorebase.api.guard import ANY_HOST, WILDCARD_BINDS, answered_names

    if ANY_HOST in settings.allowed_hosts:
        return "answers to any host name (--allowed-host *): check them in front of it"
    names = answered_names(settings.allowed_hosts, settings.host)
    line = f"answers to the host names {', '.join(names)}"
    if settings.host in WILDCARD_BINDS and not settings.allowed_hosts:
        line += (
            "; clients on other machines reach it by a name you allow with --allowed-host "
            "(LOREBASE_ALLOWED_HOSTS)"
        )
    return line


@handles_errors
def worker(
    ctx: typer.Context,
    workers: Annotated[int | None, typer.Option(help="Ingestion worker threads.")] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch/--no-watch", help="Also follow the folders of this machine's sources."
        ),
    ] = False,
    lease_seconds: Annotated[
        float,
        typer.Option(help="How long a job stays claimed without this process's heartbeat."),
    ] = 30.0,
) -> None:
    """Index uploads, reindexes and folder passes for the `serve` processes of a PostgreSQL
    store, until stopped (Ctrl-C or SIGTERM); run any number, on any machine. A job whose
    worker is killed is picked up by another."""
    import signal
    import threading

    from lorebase.logs import configure_logging
    from lorebase.settings import ServeSettings

    settings = ServeSettings(watch=watch, lease_seconds=lease_seconds)
    if workers:
        settings = dataclasses.replace(settings, workers=workers)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    chosen = settings_from(ctx, settings).serving()
    _needs_shared_store(chosen, True, "`lorebase worker`")
    configure_logging()
    with open_from(ctx, holder="lorebase worker", settings=chosen) as lb:
        lb.start_serving()
        Console().print(
            Text(f"lorebase worker indexing with {settings.workers} threads; Ctrl-C stops it"),
            soft_wrap=True,
        )
        stop.wait()
        lb.stop_serving()


def _needs_shared_store(settings: Settings, asked: bool, what: str) -> None:
    """Refuse, before anything starts, what only a store shared by processes can do."""
    if asked and not settings.shared_store:
        raise InvalidInput(
            f"{what} needs a store that several processes share: give --store "
            "postgresql://... (or LOREBASE_STORE); with the embedded store `serve` indexes itself"
        )


def _check_port(host: str, port: int) -> None:
    """Refuse before announcing anything when the address is taken."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise Conflict(
                f"cannot listen on {host}:{port} ({error.strerror or 'in use'}); is another "
                "lorebase serving there? Stop it, or choose another port with --port"
            ) from None


@users_app.command("list")
@handles_errors
def users_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List users and their roles."""
    with administering(ctx, create=False) as accounts:
        users = accounts.list_users()
    render.print_lines(
        users,
        as_json,
        lambda user: f"{user.name}\t{user.role.value}",
        header="name\trole",
        empty="No users yet: `lorebase serve` creates "
        "an admin on its first start, or `lorebase users create NAME`.",
    )


@users_app.command("create")
@handles_errors
def users_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="User name.")],
    admin: Annotated[bool, typer.Option("--admin", help="Make an administrator.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a user (member by default) and print a first API key for them, once."""
    with administering(ctx) as accounts:
        user = accounts.create_user(name, Role.ADMIN if admin else Role.MEMBER)
        key, record = accounts.create_key(user.id, "created with the user")
        accounts.audit(OPERATOR, "create_user", f"user:{user.id}", OPERATOR)
    if as_json:
        shown = {"user": render.to_jsonable(user), "key": key, "record": record}
        render.print_json(render.console(), render.to_jsonable(shown))
        return
    Console().print(Text(f"created {user.name}; API key (shown once): {key}"))


@teams_app.command("list")
@handles_errors
def teams_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List teams."""
    with administering(ctx, create=False) as accounts:
        teams = accounts.list_teams()
    render.print_lines(
        teams,
        as_json,
        lambda team: team.name,
        header="name",
        empty="No teams yet: `lorebase teams create NAME`.",
    )


@teams_app.command("create")
@handles_errors
def teams_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Name.")],
    as_json: JsonOption = False,
) -> None:
    """Create a team."""
    with administering(ctx) as accounts:
        team = accounts.create_team(name)
        accounts.audit(OPERATOR, "create_team", f"team:{team.id}", OPERATOR)
    if as_json:
        render.print_json(render.console(), render.to_jsonable(team))
        return
    Console().print(Text(f"created team {team.name}"))


@teams_app.command("add")
@handles_errors
def teams_add(
    ctx: typer.Context,
    team: Annotated[str, typer.Argument(help="The team.")],
    user: Annotated[str, typer.Argument(help="The user.")],
    admin: Annotated[bool, typer.Option("--admin", help="As a team admin.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Add a user to a team (or change their role in it)."""
    with administering(ctx) as accounts:
        found_team, found_user = accounts.get_team(team), accounts.get_user(user)
        role = Role.ADMIN if admin else Role.MEMBER
        accounts.set_member(found_team.id, found_user.id, role)
        accounts.audit(
            OPERATOR, "set_member", f"team:{found_team.id} user:{found_user.id}", OPERATOR
        )
    if as_json:
        shown = {"team": found_team.name, "user": found_user.name, "role": role.value}
        render.print_json(render.console(), shown)
        return
    Console().print(Text(f"{user} is now {role.value} of {team}"))


@teams_app.command("remove")
@handles_errors
def teams_remove(
    ctx: typer.Context,
    team: Annotated[str, typer.Argument(help="The team.")],
    user: Annotated[str, typer.Argument(help="The user.")],
    as_json: JsonOption = False,
) -> None:
    """Remove a user from a team."""
    with administering(ctx) as accounts:
        found_team, found_user = accounts.get_team(team), accounts.get_user(user)
        accounts.set_member(found_team.id, found_user.id, None)
        accounts.audit(
            OPERATOR, "remove_member", f"team:{found_team.id} user:{found_user.id}", OPERATOR
        )
    if as_json:
        shown = {"team": found_team.name, "user": found_user.name, "role": None}
        render.print_json(render.console(), shown)
        return
    Console().print(Text(f"{user} left {team}"))


@keys_app.command("list")
@handles_errors
def keys_list(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List API keys (their prefixes, never the keys)."""
    with administering(ctx, create=False) as accounts:
        names = {u.id: u.name for u in accounts.list_users()}
        keys = accounts.list_keys()
    out = render.console()
    if as_json:
        render.print_json(out, render.to_jsonable(keys))
        return
    if not keys:
        out.print(Text("No API keys yet: `lorebase keys create USER`."))
        return
    table = Table(title="API keys", title_justify="left")
    for column in ("id", "user", "prefix", "name", "state"):
        table.add_column(column)
    now = time.time()
    for key in keys:
        state = (
            "revoked"
            if key.revoked_at
            else ("expired" if key.expires_at and key.expires_at <= now else "active")
        )
        table.add_row(
            str(key.id), Text(names.get(key.user_id, "?")), key.prefix + "…", Text(key.name), state
        )
    out.print(table)


@keys_app.command("create")
@handles_errors
def keys_create(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="The key's user.")],
    name: Annotated[str, typer.Option(help="What the key is for.")] = "",
    days: Annotated[
        int | None, typer.Option(help="Expires after this many days (1 or more).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key for a user; it is printed once and stored only as a hash."""
    if days is not None and days < 1:  # 0 used to mean "never", a negative "already expired"
        raise InvalidInput("--days must be 1 or more; leave it out for a key that never expires")
    with administering(ctx) as accounts:
        found = accounts.get_user(user)
        expires = time.time() + days * DAY if days is not None else None
        key, record = accounts.create_key(found.id, name, expires)
        accounts.audit(OPERATOR, "create_key", f"key:{record.id}", OPERATOR)
    if as_json:  # as POST /v1/keys answers
        render.print_json(render.console(), {"key": key, "record": render.to_jsonable(record)})
        return
    Console().print(Text(f"API key for {user} (shown once): {key}"))


@keys_app.command("revoke")
@handles_errors
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[int, typer.Argument(help="The key's id.")],
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key at once."""
    with administering(ctx) as accounts:
        accounts.revoke_key(key_id)
        accounts.audit(OPERATOR, "revoke_key", f"key:{key_id}", OPERATOR)
    if as_json:
        render.print_json(render.console(), {"revoked": key_id})
        return
    Console().print(Text(f"revoked key {key_id}"))


@keys_app.command("rotate-data-key")
@handles_errors
def keys_rotate_data_key(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Re-encrypt every uploaded original and display name under a new data key (stop the
    server first). Safe to run again if it was interrupted."""
    with open_from(ctx, holder="lorebase keys rotate-data-key") as lb:
        rotation = lb.rotate_data_key()
        lb.accounts.audit(OPERATOR, "rotate_data_key", f"key:{rotation.new_key.id}", OPERATOR)
    if as_json:
        shown = {
            "key_id": rotation.new_key.id,
            "files": rotation.blobs,
            "names": rotation.names,
            # Only when the key lives in LOREBASE_DATA_KEY: shown once, to put there.
            "new_key": rotation.new_key.to_base64() if rotation.key_file is None else None,
        }
        render.print_json(render.console(), shown)
        return
    console = Console()
    console.print(
        Text(
            f"re-encrypted {rotation.blobs} files and {rotation.names} names "
            f"under key {rotation.new_key.id}"
        )
    )
    if rotation.key_file is None:
        console.print(Text("LOREBASE_DATA_KEY is set: put the new key there now (shown once):"))
        console.print(Text(rotation.new_key.to_base64(), style="bold"))


@keys_app.command("new-data-key")
@handles_errors
def keys_new_data_key(as_json: JsonOption = False) -> None:
    """Print a fresh random data key (base64) for LOREBASE_DATA_KEY: what every process of a
    PostgreSQL store must be given, the same in each. It is not stored anywhere."""
    from lorebase.vault.keys import DataKey

    key = DataKey.generate().to_base64()
    if as_json:
        render.print_json(render.console(), {"data_key": key})
        return
    Console().print(Text(key))
