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
from lorebase.api.guard import api_key
from lorebase.api.problems import problem, problem_for
from lorebase.errors import LorebaseError
from lorebase.service import Lorebase

MCP_PATH = "/mcp"


class McpEndpoint:
    """An ASGI app: checks the key, then hands the request to the SDK's session manager."""

    def __init__(self, lb: Lorebase) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        logging.getLogger(SDK_LOGGER).setLevel(SDK_LOG_LEVEL)

        def toolbox_of(ctx: Any) -> Any:
            from lorebase.agent.tools import toolbox_for

            return toolbox_for(lb, lb.authenticate(api_key(ctx.request.headers)))

        self.lb = lb
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
            self.lb.authenticate(api_key(request.headers))
        except LorebaseError as error:
            response = problem_for(error)
            await response(scope, receive, send)
            return
        if request.method == "GET":
            # Stateless: there is nothing to push, so no stream to open (a GET used to hang
            # with not even a keep-alive). The transport's spec allows exactly this answer.
            detail = "this server sends no notifications; send requests with POST"
            response = problem(405, "method-not-allowed", "Method not allowed", detail)
            response.headers["Allow"] = "POST, DELETE"
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)
