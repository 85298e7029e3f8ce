"""FastAPI dependencies: the application service, its metrics, and the caller behind a
request."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import Depends, Path, Request

from lorebase.api.guard import CALLER_STATE, api_key, session_token
from lorebase.api.metrics import Metrics
from lorebase.service import Caller, Lorebase


def get_lb(request: Request) -> Lorebase:
    lb: Lorebase = request.app.state.lb
    return lb


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_api_key(request: Request) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    return api_key(request.headers)


def get_session(request: Request) -> str | None:
    """The sign-in session the request's cookie names, when it carries no key."""
    return None if api_key(request.headers) else session_token(request.headers)


def get_caller(
    request: Request,
    lb: Annotated[Lorebase, Depends(get_lb)],
    key: Annotated[str | None, Depends(get_api_key)],
    session: Annotated[str | None, Depends(get_session)],
) -> Caller:
    """The caller :class:`~lorebase.api.guard.KeyFirst` authenticated for this request, or
    (a path it does not guard, keys off) the one these credentials name."""
    known: Caller | None = getattr(request.state, CALLER_STATE, None)
    caller = known if known is not None else lb.authenticate(key, session)
    client = request.client.host if request.client else None
    return dataclasses.replace(caller, client=client)


LbDep = Annotated[Lorebase, Depends(get_lb)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ApiKeyDep = Annotated[str | None, Depends(get_api_key)]
SessionDep = Annotated[str | None, Depends(get_session)]
CallerDep = Annotated[Caller, Depends(get_caller)]

# Row ids fit SQLite's signed 64-bit integers; document and chunk ids are hex.
MAX_ROW_ID = 2**63 - 1
KbId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="A knowledge base id.")]
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
DocumentId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")]
