"""`lorebase mcp`, `lorebase ask` and `lorebase profile create|list|delete`."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.agent.schema import MAX_TOP_K
from lorebase.cli import render
from lorebase.cli.common import CliContext, JsonOption, command_group, handles_errors, open_from

ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Use only the knowledge bases of this profile (see `lorebase profile`; "
        "default: all of them).",
    ),
]
InjectOption = Annotated[
    bool,
    typer.Option(
        "--inject",
        help="Put the top passages in the prompt instead of letting the model call the tools.",
    ),
]
TopKOption = Annotated[
    int,
    typer.Option(
        "--top-k", min=1, max=MAX_TOP_K, help="Passages to put in the prompt with --inject."
    ),
]
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="OpenAI-compatible base URL ending in /v1 (environment LOREBASE_CHAT_URL; "
        "default Ollama on 127.0.0.1:11434).",
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="The chat model (environment LOREBASE_CHAT_MODEL)."),
]
AllowCloudOption = Annotated[
    bool,
    typer.Option(
        "--allow-cloud",
        help="Let a non-local endpoint receive knowledge-base content (environment "
        "LOREBASE_ALLOW_CLOUD_MODEL_ACCESS=true).",
    ),
]
LocalHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--local-host",
        help="Count this host name, address or CIDR network as local (repeatable; "
        "environment LOREBASE_LOCAL_HOSTS, comma-separated).",
    ),
]


@handles_errors
def mcp(ctx: typer.Context, profile: ProfileOption = None) -> None:
    """Serve the knowledge bases to an agent over MCP on stdin/stdout: the tools
    list_knowledge_bases, search_knowledge_base, read_document and read_surrounding_chunks.
    Retrieved text comes back fenced as untrusted data. Point your agent's MCP settings at
    the command `lorebase mcp`."""
    from lorebase.agent.mcp import serve_stdio
    from lorebase.agent.tools import toolbox_for

    with open_from(ctx, holder="lorebase mcp") as lb:
        serve_stdio(toolbox_for(lb, profile=profile))


@handles_errors
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question, in your own words.")],
    kb: Annotated[
        list[str] | None,
        typer.Option("--kb", help="Knowledge base(s) to answer from (default: all; repeatable)."),
    ] = None,
    profile: ProfileOption = None,
    inject: InjectOption = False,
    top_k: TopKOption = 5,
    url: UrlOption = None,
    model: ModelOption = None,
    allow_cloud: AllowCloudOption = False,
    local_host: LocalHostOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer a question with a chat model over the knowledge bases, streaming the answer
    and ending with the numbered sources it cited. A model on another machine gets no
    knowledge-base content unless the operator allows it."""
    from lorebase.agent.ask import Asker
    from lorebase.agent.chat import chat_client
    from lorebase.agent.tools import toolbox_for

    with (
        open_from(ctx, holder="lorebase ask") as lb,
        chat_client(
            lb.settings.chat,
            url=url,
            model=model,
            local_hosts=local_host or (),
            allow_cloud=True if allow_cloud else None,
        ) as client,
    ):
        only = {lb.kb(name, totals=False).id for name in kb} if kb else None
        asker = Asker(toolbox_for(lb, profile=profile, only=only), client, lb.usage_meter)
        answer, notices = _show(asker.ask(question, inject=inject, top_k=top_k), as_json)
    if as_json:
        render.print_json(Console(), _answer_json(answer, notices, client.decision))
        return
    if answer.sources:
        heading = "Sources:" if answer.cited else "Sources retrieved (none cited):"
        out = Console()
        out.print(Text(f"\n{heading}", style="bold"))
        for source in answer.sources:
            out.print(Text(f"[{source.number}] {source.label}"), soft_wrap=True)


def _show(events: Iterable[Any], as_json: bool) -> tuple[Any, list[str]]:
    """Stream the answer to stdout (notices and tool use to stderr); return the Answer."""
    from lorebase.agent.ask import Answer, Delta, Notice, ToolUse
    from lorebase.agent.fence import for_terminal

    err = Console(stderr=True)
    notices: list[str] = []
    for event in events:
        if isinstance(event, Notice):
            notices.append(event.text)
            err.print(Text(event.text, style="yellow"), soft_wrap=True)
        elif isinstance(event, Delta) and not as_json:
            sys.stdout.write(for_terminal(event.text))
            sys.stdout.flush()
        elif isinstance(event, ToolUse) and not as_json:
            err.print(Text(f"· {event.name}" + ("" if event.ok else " (error)"), style="dim"))
        elif isinstance(event, Answer):
            if not as_json:
                sys.stdout.write("\n")
            return event, notices
    raise AssertionError("an ask ends with an Answer")  # pragma: no cover


def _answer_json(answer: Any, notices: list[str], decision: Any) -> dict[str, Any]:
    return {
        "answer": answer.text,
        "cited": answer.cited,
        "rounds": answer.rounds,
        "endpoint": decision.endpoint,
        "local": decision.local,
        "content_allowed": decision.content_allowed,
        "notices": notices,
        "sources": [render.to_jsonable(s) | {"label": s.label} for s in answer.sources],
    }


profile_app = command_group("Profiles: named sets of knowledge bases a conversation may use.")


def _data_dir(ctx: typer.Context) -> Path:
    from lorebase.settings import Settings

    options: CliContext = ctx.find_root().obj
    return Settings.from_env(options.data_dir).data_dir


@profile_app.command()
@handles_errors
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A unique name (letters, digits, _ . -).")],
    kb: Annotated[
        list[str], typer.Option("--kb", help="A knowledge base it may use (repeatable).")
    ],
    description: Annotated[str, typer.Option(help="What it is for.")] = "",
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a profile of the same name.")
    ] = False,
    writable: Annotated[
        list[str] | None,
        typer.Option(
            "--writable",
            help="One of its --kb its agents may save notes into with the save_note tool "
            "(repeatable; default: none).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a profile: the knowledge bases a conversation (an agent, a chat channel) may
    use. Pass it to `mcp` and `ask` with --profile."""
    from lorebase.agent.profiles import Profiles, system_prompt_hint
    from lorebase.app import open_lorebase
    from lorebase.settings import Settings

    with open_lorebase(settings=Settings.from_env(_data_dir(ctx)), embedder=None) as lb:
        # Each must name one base (a name several bases share: give the id).
        bases = {wanted: lb.kb(wanted, totals=False) for wanted in kb}
        profile = Profiles(lb.settings.data_dir).create(
            name, kb, description=description, replace=replace, writable=writable or ()
        )
        hint = system_prompt_hint([bases[n] for n in profile.knowledge_bases])
    if as_json:
        render.print_json(Console(), render.to_jsonable(profile) | {"system_prompt_hint": hint})
        return
    Console().print(Text(f"created profile {profile.name}: {', '.join(profile.knowledge_bases)}"))
    Console().print(Text(hint, style="dim"), soft_wrap=True)


@profile_app.command("list")
@handles_errors
def list_(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List profiles with their knowledge bases."""
    from lorebase.agent.profiles import Profiles

    profiles = Profiles(_data_dir(ctx)).all()
    if as_json:
        render.print_json(Console(), render.to_jsonable(profiles))
        return
    table = Table(title="Profiles", title_justify="left")
    for column in ("name", "knowledge bases", "description"):
        table.add_column(column, overflow="fold")
    for profile in profiles:
        table.add_row(
            Text(profile.name), Text(", ".join(profile.knowledge_bases)), Text(profile.description)
        )
    Console().print(table)


@profile_app.command()
@handles_errors
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The profile to delete.")],
    as_json: JsonOption = False,
) -> None:
    """Delete a profile (its knowledge bases are untouched)."""
    from lorebase.agent.profiles import Profiles

    Profiles(_data_dir(ctx)).delete(name)
    if as_json:
        render.print_json(Console(), {"deleted": name})
        return
    Console().print(Text(f"deleted profile {name}"))
