"""Agent tools over HTTP for frameworks that speak OpenAI function calling:
``GET /v1/tools`` (schemas) and ``POST /v1/tools/{name}`` (call one)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from lorebase.accounts.access import Caller
from lorebase.agent.profiles import Profiles
from lorebase.agent.tools import ToolBox
from lorebase.api.deps import CallerDep, ServerDep
from lorebase.api.server import Server

router = APIRouter(prefix="/v1/tools", tags=["agent tools"])
ProfileQuery = Annotated[
    str | None, Query(max_length=64, description="Only this profile's knowledge bases.")
]


def toolbox_for(server: Server, caller: Caller, profile: str | None) -> ToolBox:
    """The tools scoped to what the caller may see (and, with a profile, to its bases)."""
    names = {kb.name for kb in server.visible_kbs(caller)}
    if profile is not None:
        names &= set(Profiles(server.lb.settings.data_dir).get(profile).knowledge_bases)
    return ToolBox(server.lb, names, upload_names=server.upload_name)


@router.get("")
def list_tools(
    server: ServerDep, caller: CallerDep, profile: ProfileQuery = None
) -> dict[str, Any]:
    """The tools as OpenAI function-calling schemas, and the system-prompt hint."""
    toolbox = toolbox_for(server, caller, profile)
    return {"tools": toolbox.schemas(), "system_prompt_hint": toolbox.hint()}


@router.post("/{name}")
def call_tool(
    name: str,
    server: ServerDep,
    caller: CallerDep,
    arguments: Annotated[dict[str, Any], Body()],
    profile: ProfileQuery = None,
) -> dict[str, Any]:
    """Call one tool with its JSON arguments. Retrieved text comes back fenced as untrusted
    data (`content_trust: untrusted-document`)."""
    result = toolbox_for(server, caller, profile).call(name, arguments)
    return {"tool": result.tool, "structured": result.structured, "text": result.text}
