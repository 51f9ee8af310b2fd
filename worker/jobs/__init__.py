"""Job implementations; importing this package registers them all."""

from worker.jobs import diagnostics, memory

__all__ = ["diagnostics", "memory"]
