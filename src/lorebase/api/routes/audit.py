"""The audit log, for administrators: every change, who made it, when and from where."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from lorebase.api.deps import CallerDep, LbDep
from lorebase.since import SINCE_FORMS, parse_since

router = APIRouter(tags=["audit"])
MAX_ENTRIES = 1000


class AuditOut(BaseModel):
    id: int
    at: float = Field(description="When (seconds since the epoch, UTC).")
    actor: str = Field(description="Who: a user's name, or `cli` for the operator's commands.")
    action: str = Field(description="What, e.g. `create_knowledge_base`, `share_knowledge_base`.")
    target: str = Field(description="On what: ids only (`kb:3`, `document:…`, `key:7`).")
    client: str | None = Field(
        description="From where: the client's address, `cli`, or null when not recorded."
    )


@router.get("/v1/audit", response_model=list[AuditOut])
def audit_log(
    lb: LbDep,
    caller: CallerDep,
    since: Annotated[
        str | None, Query(max_length=64, description=f"Only changes from then on: {SINCE_FORMS}.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_ENTRIES)] = 100,
) -> list[AuditOut]:
    """The newest audited changes, newest first (administrators only: 403 otherwise); 422
    naming the accepted forms for a malformed `since`. The log keeps the newest
    `LOREBASE_AUDIT_ROWS` entries."""
    start = parse_since(since) if since is not None else None
    return [
        AuditOut(id=e.id, at=e.at, actor=e.actor, action=e.action, target=e.target, client=e.client)
        for e in lb.audit_log(caller, since=start, limit=limit)
    ]
