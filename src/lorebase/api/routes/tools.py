"""Agent tools over HTTP for frameworks that speak OpenAI function calling:
``GET /v1/tools`` (schemas) and ``POST /v1/tools/{name}`` (call one)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, Field

from lorebase.agent.profiles import Profiles, visible_profiles
from lorebase.agent.tools import toolbox_for
from lorebase.api.deps import CallerDep, LbDep

router = APIRouter(prefix="/v1/tools", tags=["agent tools"])
profiles_router = APIRouter(tags=["agent tools"])


class ProfileOut(BaseModel):
    name: str
    description: str
    knowledge_bases: list[str]
    teams: dict[str, str] = Field(
        default_factory=dict,
        description="The team each of its team bases belongs to, by base name (a base shared "
        "with you from another team is named with its team).",
    )
    writable: list[str] = Field(
        default_factory=list, description="Of its bases, those its agents save notes into."
    )


@profiles_router.get("/v1/profiles", response_model=list[ProfileOut])
def list_profiles(lb: LbDep, caller: CallerDep) -> list[ProfileOut]:
    """The agent profiles (`lorebase profile`), each with the bases in it you may see (and
    the team each team base belongs to): what `profile` in /v1/ask, /v1/tools and MCP narrows
    the tools to."""
    names = lb.team_names()
    teams = {
        kb.name: names[kb.team_id]
        for kb in lb.knowledge_bases(caller, totals=False)
        if kb.team_id is not None and kb.team_id in names
    }
    writable = {p.name: p.writable for p in Profiles(lb.settings.data_dir).all()}
    return [
        ProfileOut(
            name=name,
            description=description,
            knowledge_bases=bases,
            teams={base: teams[base] for base in bases if base in teams},
            writable=[base for base in writable.get(name, ()) if base in bases],
        )
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
