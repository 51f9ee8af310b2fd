"""Capture: the session log the Claude Code hooks write, without the agent's help."""
