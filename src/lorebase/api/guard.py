"""Checks made from the request line and headers alone, before any body is read.

FastAPI reads (and spools) a request's body before it resolves the route's dependencies, so a
key checked as a dependency comes after the body: a client without a key could make the server
spool a gigabyte before hearing ``401``. :class:`KeyFirst` answers ``401`` from the headers
first. The size of every body is bounded by FastAPI's own ``max_body_size`` (``Content-Length``
checked first, the stream counted as it arrives, ``413`` either way): small for JSON, the upload
limit for the upload route (see :func:`lorebase.api.app.create_app`).
"""

from __future__ import annotations

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lorebase.api.problems import problem_for
from lorebase.errors import Unauthorized
from lorebase.service import Lorebase

# Paths that answer without a key: health, readiness, metrics, the API's own description.
KEYED_PREFIXES = ("/v1/", "/mcp")


def api_key(headers: Headers) -> str | None:
    """The key a request carries: `Authorization: Bearer KEY`, else `X-API-Key`."""
    authorization = headers.get("authorization")
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key")


def needs_key(path: str) -> bool:
    return path == "/mcp" or path.startswith(KEYED_PREFIXES)


REFUSALS = (400, 401, 413)  # malformed, no key, too large


class CloseAfterRefusal:
    """A request refused before its body was read (malformed: 400; no key: 401; over the
    limit: 413) gets ``Connection: close``, so the server stops reading what the client is
    still sending instead of draining it for the next request on the connection (ASGI
    middleware, outermost)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in REFUSALS:
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)


class KeyFirst:
    """Refuse a keyed path without a valid key before the body is read (ASGI middleware)."""

    def __init__(self, app: ASGIApp, lb: Lorebase) -> None:
        self.app = app
        self.lb = lb

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.lb.settings.serve.auth and needs_key(scope["path"]):
            key = api_key(Headers(scope=scope))
            try:
                await anyio.to_thread.run_sync(self.lb.authenticate, key)
            except Unauthorized as error:
                response = problem_for(error)
                response.headers["Connection"] = "close"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
