"""Job implementations; importing this package registers them all."""

from learning_memory.worker.jobs import code, context, diagnostics, experiences, git, learning, memory

__all__ = ["code", "context", "diagnostics", "experiences", "git", "learning", "memory"]
