"""What model calls cost: administrators see everyone's, a user their own."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from lorebase.api.deps import CallerDep, LbDep
from lorebase.since import SINCE_FORMS, parse_since
from lorebase.usage import usage_json

router = APIRouter(tags=["usage"])


class UsageOut(BaseModel):
    knowledge_base_id: int | None = Field(
        description="The base the calls served (null: a query over several bases at once, "
        "or a chat)."
    )
    knowledge_base: str | None = Field(description="Its name (null once it is deleted).")
    user: str | None = Field(
        description="Whose calls (null: the command line's, or background indexing)."
    )
    model: str = Field(
        description="The named embedder (`default`: the server's own) or chat model."
    )
    role: str = Field(description="`embedding` (passes, queries, re-embeds) or `chat` (ask).")
    calls: int
    texts: int
    tokens: int = Field(
        description="Estimated tokens sent (lorebase's estimate, all models alike)."
    )
    seconds: float = Field(description="Time the model took to answer.")
    since: float = Field(description="The start of the first hour counted (epoch seconds).")


@router.get("/v1/usage", response_model=list[UsageOut])
def usage(
    lb: LbDep,
    caller: CallerDep,
    since: Annotated[
        str | None, Query(max_length=64, description=f"Only calls from then on: {SINCE_FORMS}.")
    ] = None,
) -> list[dict[str, Any]]:
    """Model calls per base, user, model and role — texts, estimated tokens, seconds — since
    a date (by hour): an administrator's answer holds everyone's, a user's their own. 422
    naming the accepted forms for a malformed `since`."""
    start = parse_since(since) if since is not None else None
    # A user's rows name the bases they may see now (one they lost sight of since is counted
    # without its name); an administrator's, every base.
    everyone = caller is None or caller.is_admin
    bases = lb.knowledge_bases(None if everyone else caller, totals=False)
    names = {kb.id: kb.name for kb in bases}
    return usage_json(lb.usage(caller, since=start), names)
