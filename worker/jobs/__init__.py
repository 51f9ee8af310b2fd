"""Job implementations; importing this package registers them all."""

from worker.jobs import code, diagnostics, experiences, git, learning, memory

__all__ = ["code", "diagnostics", "experiences", "git", "learning", "memory"]
