"""Replay real Claude Code sessions through the plugin's hooks: events, errors, latency, what was mined.

``python -m bench capture TRANSCRIPT...`` reads each session's JSONL file into the hook events
Claude Code fired (``transcripts``), builds each ``mcp_tool`` hook's call from the plugin's
hooks.json as Claude Code does (``hooks``), moves the session into a worktree of a scratch
repository (``worktrees``), and sends the calls in order to a real server with a real worker
(``runner``). Then it reads what was kept (``stored``) and scores it against hand-made labels
(``scoring``, ``labels.json``). Transcripts stay outside the repository; only labels are kept here.
"""

from bench.capture.benchmark import add_arguments, run

__all__ = ["add_arguments", "run"]
