"""The tools, one module per capability; each declares its tools with ``server.tool_registry.tool``.

Importing this package imports every tool module (the hook tools too), and
:func:`register_all` adds their tools in the order of :data:`MODULES` (``tools/list``'s order).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from learning_memory.server.hooks import session_tools as session_hook_tools
from learning_memory.server.hooks import tools as hook_tools
from learning_memory.server.services import AppServices
from learning_memory.server.tool_registry import register
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

MODULES = (system, memory, ghap, search, code, git, learning, loops, context, hook_tools, session_hook_tools)


def register_all(server: MCPServer[AppServices]) -> None:
    register(server, MODULES)
