"""FastAPI dependencies: the server object and the caller behind a request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Request

from lorebase.accounts.access import Caller
from lorebase.api.server import Server


def get_server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def get_api_key(
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return x_api_key


def get_caller(
    server: Annotated[Server, Depends(get_server)],
    key: Annotated[str | None, Depends(get_api_key)],
) -> Caller:
    return server.caller(key)


ServerDep = Annotated[Server, Depends(get_server)]
ApiKeyDep = Annotated[str | None, Depends(get_api_key)]
CallerDep = Annotated[Caller, Depends(get_caller)]

# Row ids fit SQLite's signed 64-bit integers; document and chunk ids are hex.
MAX_ROW_ID = 2**63 - 1
KbId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="A knowledge base id.")]
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
DocumentId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")]
