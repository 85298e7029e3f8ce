"""A team base shared with another team or a user: grant, list, revoke."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from lorebase.api.deps import CallerDep, KbId, LbDep, RowId
from lorebase.api.schemas import GrantIn, GrantOut
from lorebase.service.sharing import SharedGrant

router = APIRouter(prefix="/v1/knowledge-bases", tags=["sharing"])


def _grant_out(shared: SharedGrant) -> GrantOut:
    grant = shared.grant
    return GrantOut(
        id=grant.id,
        knowledge_base_id=grant.kb_id,
        grantee=grant.grantee.value,
        name=shared.name,
        access=grant.access.value,
        granted_by=grant.granted_by,
        created_at=grant.created_at,
    )


@router.get("/{kb_id}/grants", response_model=list[GrantOut])
def list_grants(kb_id: KbId, lb: LbDep, caller: CallerDep) -> list[GrantOut]:
    """Whom the base is shared with (its administrators only: 403 otherwise)."""
    kb = lb.kb_by_id(kb_id, caller, administer=True)
    return [_grant_out(g) for g in lb.grants(kb)]


@router.post("/{kb_id}/grants", response_model=GrantOut, status_code=status.HTTP_201_CREATED)
def share(kb_id: KbId, body: GrantIn, lb: LbDep, caller: CallerDep) -> GrantOut:
    """Share a team base with another team or a user (`team` or `user`, by name),
    read-only or read-write (`access`); sharing again with the same one changes the access.
    The grantees see it at their next request. 403 unless you administer the base (its
    team's admins), 404 for a team or user that does not exist, 422 for a base that is not a
    team's."""
    kb = lb.kb_by_id(kb_id, caller, administer=True)
    return _grant_out(
        lb.share_kb(kb, team=body.team, user=body.user, write=body.access == "write", caller=caller)
    )


@router.delete("/{kb_id}/grants/{grant_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke(kb_id: KbId, grant_id: RowId, lb: LbDep, caller: CallerDep) -> Response:
    """End a grant: from the grantees' next request on, the base is gone for them."""
    kb = lb.kb_by_id(kb_id, caller, administer=True)
    lb.unshare_kb(kb, grant_id=grant_id, caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
