"""The baseline for ``bench startup``: a plain mcp 2.x server with one tool, as most peers are built."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server: MCPServer[None] = MCPServer("plain")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run("stdio")
