"""The agent tools over MCP's streamable HTTP transport, mounted at ``/mcp``.

The same API keys and scopes as the REST routes: a request without a valid key is refused
before the MCP layer sees it, and each request's ToolBox holds only the bases its caller may
see. Stateless mode: every request stands alone, so no session outlives its key.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from lorebase.agent.mcp import SDK_LOG_LEVEL, SDK_LOGGER, build_server
from lorebase.api.problems import problem
from lorebase.api.routes.tools import toolbox_for
from lorebase.api.server import Server
from lorebase.errors import LorebaseError

MCP_PATH = "/mcp"


def _key(request: Request) -> str | None:
    headers = request.headers
    authorization = headers.get("authorization")
    if authorization and authorization.lower().startswith("bearer "):
        return str(authorization[7:].strip())
    return headers.get("x-api-key")


class McpEndpoint:
    """An ASGI app: checks the key, then hands the request to the SDK's session manager."""

    def __init__(self, server: Server) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        logging.getLogger(SDK_LOGGER).setLevel(SDK_LOG_LEVEL)

        def toolbox_of(ctx: Any) -> Any:
            caller = server.caller(_key(ctx.request))
            return toolbox_for(server, caller, None)

        self.server = server
        self.manager = StreamableHTTPSessionManager(
            app=build_server(toolbox_of), stateless=True, json_response=True
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            self.server.caller(_key(request))
        except LorebaseError as error:
            response = problem(401, "unauthorized", "Unauthorized", str(error))
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)
