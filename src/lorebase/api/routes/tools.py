"""Agent tools over HTTP for frameworks that speak OpenAI function calling:
``GET /v1/tools`` (schemas) and ``POST /v1/tools/{name}`` (call one)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel

from lorebase.agent.profiles import visible_profiles
from lorebase.agent.tools import toolbox_for
from lorebase.api.deps import CallerDep, LbDep

router = APIRouter(prefix="/v1/tools", tags=["agent tools"])
profiles_router = APIRouter(tags=["agent tools"])


class ProfileOut(BaseModel):
    name: str
    description: str
    knowledge_bases: list[str]


@profiles_router.get("/v1/profiles", response_model=list[ProfileOut])
def list_profiles(lb: LbDep, caller: CallerDep) -> list[ProfileOut]:
    """The agent profiles (`lorebase profile`), each with the bases in it you may see: what
    `profile` in /v1/ask, /v1/tools and MCP narrows the tools to."""
    return [
        ProfileOut(name=name, description=description, knowledge_bases=bases)
        for name, description, bases in visible_profiles(lb, caller)
    ]


ProfileQuery = Annotated[
    str | None, Query(max_length=64, description="Only this profile's knowledge bases.")
]


@router.get("")
def list_tools(lb: LbDep, caller: CallerDep, profile: ProfileQuery = None) -> dict[str, Any]:
    """The tools as OpenAI function-calling schemas, and the system-prompt hint."""
    toolbox = toolbox_for(lb, caller, profile)
    return {"tools": toolbox.schemas(), "system_prompt_hint": toolbox.hint()}


@router.post("/{name}")
def call_tool(
    name: str,
    lb: LbDep,
    caller: CallerDep,
    arguments: Annotated[dict[str, Any], Body()],
    profile: ProfileQuery = None,
) -> dict[str, Any]:
    """Call one tool with its JSON arguments. Retrieved text comes back fenced as untrusted
    data (`content_trust: untrusted-document`)."""
    result = toolbox_for(lb, caller, profile).call(name, arguments)
    return {"tool": result.tool, "structured": result.structured, "text": result.text}
