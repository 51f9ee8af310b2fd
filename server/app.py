"""Builds the MCP server: lifespan, error mapping, tools."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from learning_memory.server.services import AppServices, make_lifespan
from learning_memory.server.tool_errors import ToolErrorMiddleware
from learning_memory.server.tools import register_all
from learning_memory.shared import __version__
from learning_memory.shared.jobs import ExecutorFactory
from learning_memory.shared.settings import Settings

# Copied into the system prompt of every Claude Code session: the one text about this server
# every session reads, so it teaches the workflow, briefly.
INSTRUCTIONS = """Learning Memory: a memory that learns across sessions. Use it as you work.
- GHAP: on a non-trivial task (a bug, a refactor, a performance or configuration problem), once you \
have a hypothesis call start_ghap(domain, strategy, goal, hypothesis, action, prediction). Its \
warnings are past falsified attempts at similar goals: read them first. update_ghap when your \
hypothesis or plan changes; resolve_ghap(status, result) as soon as the prediction holds \
(confirmed) or fails (falsified: give the surprise and the root cause), or you drop it \
(abandoned). A lesson (what worked) makes the experience most useful later. One entry is active \
at a time.
- Before a non-trivial task: assemble_context(query) gives relevant past experiences, values and \
memories, a line each with an id (expand_context(ids) for the record); get_premortem_warnings(goal) \
what failed before. Hooks may already have shown you some, marked "Learning memory": after a \
failing run, a fix that worked for the same failure before in this repository (learned from past \
sessions without your help; try it first).
- Memories: store_memory for durable facts, preferences and workflows (not task progress); \
retrieve_memories to recall them.
- Code and history: index_codebase, then search_code or find_similar_code; search_commits, \
get_file_history, get_churn_hotspots, get_code_authors.
- Values: the /retro skill clusters experiences (get_clusters, get_cluster_members) and stores \
validated lessons (validate_value, store_value).
Long jobs answer a job_id: follow it with get_job_status. Errors come back as \
{"error": {"type", "message"}}. The hook_* tools are for the plugin's hooks."""


def build_server(
    settings: Settings | None = None, *, executor: ExecutorFactory | None = None
) -> MCPServer[AppServices]:
    """The MCP server; ``executor`` runs jobs in this process in inline mode (see
    ``learning_memory.composition``, which passes the worker's)."""
    server: MCPServer[AppServices] = MCPServer(
        "learning-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=make_lifespan(settings, executor),
        middleware=[ToolErrorMiddleware()],
    )
    register_all(server)
    return server
