"""FastAPI dependencies: the server object and the caller behind a request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from lorebase.accounts.access import Caller
from lorebase.api.server import Server


def get_server(request: Request) -> Server:
    return request.app.state.server  # type: ignore[no-any-return]


def get_caller(
    server: Annotated[Server, Depends(get_server)],
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Caller:
    key = x_api_key
    if authorization and authorization.lower().startswith("bearer "):
        key = authorization[7:].strip()
    return server.caller(key)


ServerDep = Annotated[Server, Depends(get_server)]
CallerDep = Annotated[Caller, Depends(get_caller)]

# Row ids fit SQLite's signed 64-bit integers; document and chunk ids are hex.
MAX_ROW_ID = 2**63 - 1
KbId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="A knowledge base id.")]
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
DocumentId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")]
