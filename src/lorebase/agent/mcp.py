"""The tools over MCP, with the official ``mcp`` SDK's low-level server.

The low-level :class:`mcp.server.Server` is used (not the decorator-based ``MCPServer``) so
that the advertised input schemas are exactly :mod:`lorebase.agent.schema`'s strict ones and
the ToolBox does the validating. A call's outcome maps as MCP expects: a result becomes text
content plus ``structuredContent``; a bad argument, an unknown or invisible knowledge base or
document becomes a result with ``isError`` and the reason (so the model can correct itself);
an unknown tool name is a protocol error. Unexpected failures are reported by class name only.

:func:`build_server` takes a function from the request context to a ToolBox, so the HTTP
transport can scope each request by its API key; stdio serves one ToolBox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lorebase import __version__
from lorebase.agent.tools import SAVE_NOTE, UNKNOWN_TOOL, ToolBox, tool_error_code
from lorebase.errors import LorebaseError, Unavailable

if TYPE_CHECKING:
    from mcp.server import Server

logger = logging.getLogger(__name__)

SERVER_NAME = "lorebase"
INSTALL_HINT = "the MCP server needs the mcp package: pip install 'mcp>=2.3'"
# The SDK's debug logs may echo malformed frames (which can hold a query); keep them out.
SDK_LOGGER = "mcp"
SDK_LOG_LEVEL = logging.WARNING

ToolBoxFor = Callable[[Any], ToolBox]


def _sdk() -> Any:
    try:
        import mcp.types
        from mcp.server import Server
        from mcp.shared.exceptions import MCPError
    except ImportError as error:
        raise Unavailable(INSTALL_HINT) from error
    return mcp.types, Server, MCPError


def build_server(toolbox_for: ToolBoxFor | ToolBox, instructions: str | None = None) -> Server:
    """An MCP server exposing the four tools. ``toolbox_for`` maps a request context (the
    SDK's ``ServerRequestContext``) to the ToolBox that answers it, or is one ToolBox."""
    types, server_class, mcp_error = _sdk()
    resolve: ToolBoxFor = (
        (lambda _ctx: toolbox_for) if isinstance(toolbox_for, ToolBox) else toolbox_for
    )
    annotations = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    # save_note adds a document (never changes or removes one): not read-only, not destructive.
    writes = types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    async def list_tools(ctx: Any, params: Any) -> Any:
        toolbox = resolve(ctx)
        tools = [
            types.Tool(
                name=spec.name,
                description=spec.description,
                input_schema=spec.parameters,
                annotations=writes if spec.name == SAVE_NOTE else annotations,
            )
            for spec in toolbox.specs()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        import anyio.to_thread

        toolbox = resolve(ctx)
        try:
            result = await anyio.to_thread.run_sync(toolbox.call, params.name, params.arguments)
        except LorebaseError as error:
            code = tool_error_code(error)
            if code == UNKNOWN_TOOL:
                raise mcp_error(code=types.INVALID_PARAMS, message=str(error)) from None
            return _error_result(types, f"{code}: {error}")
        except Exception as error:  # a bug: say which kind, never what (it may quote content)
            logger.warning("tool %s failed with %s", params.name, type(error).__name__)
            return _error_result(types, f"internal error ({type(error).__name__})")
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=result.structured,
        )

    server: Server = server_class(
        SERVER_NAME,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def _error_result(types: Any, message: str) -> Any:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def serve_stdio(toolbox: ToolBox) -> None:
    """Serve ``toolbox`` on stdin/stdout until the client closes stdin."""
    _sdk()
    import anyio
    from mcp.server.stdio import stdio_server

    logging.getLogger(SDK_LOGGER).setLevel(SDK_LOG_LEVEL)
    server = build_server(toolbox, instructions=toolbox.hint())

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
