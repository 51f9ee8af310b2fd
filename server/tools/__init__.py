"""Tool modules; each registers its tools on the server."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from learning_memory.server.hooks import tools as hook_tools
from learning_memory.server.services import AppServices
from learning_memory.server.tools import (
    code,
    context,
    ghap,
    git,
    learning,
    loops,
    memory,
    search,
    system,
)


def register_all(server: MCPServer[AppServices]) -> None:
    system.register(server)
    memory.register(server)
    ghap.register(server)
    search.register(server)
    code.register(server)
    git.register(server)
    learning.register(server)
    loops.register(server)
    context.register(server)
    hook_tools.register(server)
