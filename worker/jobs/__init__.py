"""Job implementations; importing this package registers them all."""

from worker.jobs import diagnostics, experiences, memory

__all__ = ["diagnostics", "experiences", "memory"]
