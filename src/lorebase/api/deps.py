"""FastAPI dependencies: the application service, its metrics, and the caller behind a
request.

Each is ``async``: FastAPI runs a plain ``def`` dependency on a worker thread, and a search
request's five dependencies were five hand-offs to a thread and back before its own (each a
thread woken and the interpreter passed over; no change in searches/s was measurable). None
of them blocks; the one that may read the database (a caller no middleware authenticated)
does so on a thread.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Path, Request

from lorebase.api.guard import CALLER_STATE, api_key, session_token
from lorebase.api.metrics import Metrics
from lorebase.service import Caller, Lorebase


async def get_lb(request: Request) -> Lorebase:
    lb: Lorebase = request.app.state.lb
    return lb


async def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def get_api_key(request: Request) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    return api_key(request.headers)


async def get_session(request: Request) -> str | None:
    """The sign-in session the request's cookie names, when it carries no key."""
    return None if api_key(request.headers) else session_token(request.headers)


async def get_caller(
    request: Request,
    lb: Annotated[Lorebase, Depends(get_lb)],
    key: Annotated[str | None, Depends(get_api_key)],
    session: Annotated[str | None, Depends(get_session)],
) -> Caller:
    """The caller :class:`~lorebase.api.guard.KeyFirst` authenticated for this request, or
    (a path it does not guard, keys off) the one these credentials name."""
    known: Caller | None = getattr(request.state, CALLER_STATE, None)
    if known is None:  # keys and sessions are rows: looked up on a thread
        known = await anyio.to_thread.run_sync(lb.authenticate, key, session)
    client = request.client.host if request.client else None
    return dataclasses.replace(known, client=client)


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
