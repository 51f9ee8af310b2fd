"""The composition root: the one module that wires the server to the worker.

The server and the worker meet only in ``shared`` (an import-linter contract keeps it so); the
server's inline mode still runs the worker's very job functions, through the executor handed in
here. The CLI builds its server here, and so do tests that want a whole server in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from learning_memory.shared.settings import Settings

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from learning_memory.server.services import AppServices
    from learning_memory.shared.jobs import JobExecutor


def in_process_executor(settings: Settings) -> JobExecutor:
    """The worker's jobs, run inside this process (inline mode); made on the first job."""
    from learning_memory.worker.in_process import InProcessExecutor

    return InProcessExecutor(settings)


def build_server(settings: Settings | None = None) -> MCPServer[AppServices]:
    """The MCP server, able to run jobs in-process when the queue mode is (or falls back to) inline."""
    from learning_memory.server.app import build_server as build_mcp_server

    return build_mcp_server(settings, executor=in_process_executor)
