"""Builds the MCP server: lifespan, error mapping, tools."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from server.services import AppContext, make_lifespan
from server.tool_errors import ToolErrorMiddleware
from server.tools import register_all
from shared import __version__
from shared.settings import Settings

INSTRUCTIONS = (
    "Learning Memory Server: a memory that learns for coding agents. Long jobs answer with a job_id; "
    'follow them with get_job_status. Errors come back as {"error": {"type", "message"}}.'
)


def build_server(settings: Settings | None = None) -> MCPServer[AppContext]:
    server: MCPServer[AppContext] = MCPServer(
        "learning-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=make_lifespan(settings),
        middleware=[ToolErrorMiddleware()],
    )
    register_all(server)
    return server
