"""Job implementations; importing this package registers them all."""

from learning_memory.worker.jobs import (
    capture,
    code,
    context,
    diagnostics,
    experiences,
    git,
    learning,
    memory,
    porting,
    value_suggestions,
)

__all__ = [
    "capture",
    "code",
    "context",
    "diagnostics",
    "experiences",
    "git",
    "learning",
    "memory",
    "porting",
    "value_suggestions",
]
