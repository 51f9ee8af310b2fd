"""Job implementations; importing this package registers them all."""

from worker.jobs import code, diagnostics, experiences, learning, memory

__all__ = ["code", "diagnostics", "experiences", "learning", "memory"]
