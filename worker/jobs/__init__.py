"""Job implementations; importing this package registers them all."""

from worker.jobs import diagnostics

__all__ = ["diagnostics"]
