"""Context the Claude Code hooks inject: recall on a labelled set, tokens, and each hook's latency.

Seeds ``bench/data/context_set.json`` (past experiences through start_ghap/resolve_ghap,
memories through store_memory) through a real MCP client over stdio, arq mode, a real worker
and the real model. Every prompt then goes through ``hook_prompt_context`` (what the
UserPromptSubmit hook injects, at the server's relevance bar) and through ``assemble_context``
with no bar, whose scores give a grid of bars without restarting the server. Each hook is timed
warm, with the worker stopped, and against a Redis that accepts connections and never answers;
the SessionStart brief is timed as the process Claude Code runs. With ``--claude`` (on when the
pinned Claude Code is installed), the same hooks are timed as Claude Code itself measures them.
"""

from bench.context.benchmark import add_arguments, run

__all__ = ["add_arguments", "run"]
