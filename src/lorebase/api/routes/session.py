"""/v1/session: the web page's sign-in. An API key is exchanged for a session cookie (HttpOnly,
SameSite=Strict, expiring) so the page never keeps the key; the answer tells the page its CSRF
token, which every change it makes must carry (see :mod:`lorebase.api.guard`)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response, status
from pydantic import BaseModel, Field

from lorebase.api.deps import CallerDep, LbDep, SessionDep
from lorebase.api.guard import SESSION_COOKIE
from lorebase.api.schemas import Strict
from lorebase.service import Caller, Lorebase
from lorebase.service.access import csrf_token

router = APIRouter(prefix="/v1/session", tags=["session"])


class SignIn(Strict):
    key: str = Field(min_length=1, max_length=200, description="An API key of yours.")


class TeamOut(BaseModel):
    id: int
    name: str
    role: str


class SessionOut(BaseModel):
    user: str
    role: str
    teams: list[TeamOut]
    auth: bool = Field(description="False when the server runs without keys (no sign-in).")
    csrf: str | None = Field(
        description="Send as `X-Lorebase-CSRF` with every change made with the cookie."
    )
    expires_at: float | None


def _out(
    lb: Lorebase, caller: Caller, session: str | None, expires_at: float | None = None
) -> SessionOut:
    names = lb.team_names()
    teams = [
        TeamOut(id=team_id, name=names.get(team_id, str(team_id)), role=role.value)
        for team_id, role in sorted(caller.teams.items())
    ]
    return SessionOut(
        user=caller.user.name,
        role=caller.user.role.value,
        teams=teams,
        auth=lb.settings.serve.auth,
        csrf=csrf_token(session) if session else None,
        expires_at=expires_at,
    )


@router.post("", response_model=SessionOut)
def sign_in(body: SignIn, request: Request, response: Response, lb: LbDep) -> SessionOut:
    """Exchange an API key for a session cookie (HttpOnly, SameSite=Strict) that lasts at most
    12 hours and ends when the key is revoked or the session is deleted."""
    caller, token, expires_at = lb.sign_in(
        body.key, request.client.host if request.client else None
    )
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=max(1, int(expires_at - time.time())),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return _out(lb, caller, token, expires_at)


@router.get("", response_model=SessionOut)
def current_session(lb: LbDep, caller: CallerDep, session: SessionDep) -> SessionOut:
    """Who the request's key or cookie belongs to, and the cookie session's CSRF token."""
    return _out(lb, caller, session if lb.settings.serve.auth else None)


@router.delete("", status_code=status.HTTP_204_NO_CONTENT)
def sign_out(lb: LbDep, session: SessionDep) -> Response:
    """End the cookie's session (sign out) and clear the cookie."""
    if session:
        lb.sign_out(session)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
