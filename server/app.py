"""Builds the MCP server: lifespan, error mapping, tools."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from server.services import AppContext, lifespan
from server.tool_errors import ToolErrorMiddleware
from server.tools import register_all
from shared import __version__

INSTRUCTIONS = (
    "Learning Memory Server: a memory that learns for coding agents. Long jobs answer with a job_id; "
    "follow them with get_job_status. Errors come back as {\"error\": {\"type\", \"message\"}}."
)


def build_server() -> MCPServer[AppContext]:
    server: MCPServer[AppContext] = MCPServer(
        "learning-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        middleware=[ToolErrorMiddleware()],
    )
    register_all(server)
    return server
