"""Agents: the knowledge base as tools (MCP, OpenAI function calling), fenced results, profiles
and ``lorebase ask``.

One transport-independent :class:`~lorebase.agent.tools.ToolBox` implements the tools; the MCP
server, the CLI and (later) the HTTP routes are thin shells over it. Nothing here is imported
by the rest of lorebase, and ``mcp`` and ``httpx`` load only when a transport is used.
"""
