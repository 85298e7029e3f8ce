"""Agents: the knowledge base as tools (MCP, OpenAI function calling), fenced results, profiles
and ``lorebase ask``.

One transport-independent :class:`~lorebase.agent.tools.ToolBox` implements the tools over the
application service (:func:`~lorebase.agent.tools.toolbox_for` makes one for a caller and a
profile); the MCP server (stdio and HTTP), the ``/v1/tools`` routes and ``ask`` are thin
shells over it. ``mcp`` and ``httpx`` load only when a transport is used.
"""
