"""Job implementations; importing this package registers them all."""

from learning_memory.worker.jobs import (
    browse,
    capture,
    code,
    context,
    curation,
    curation_merge,
    diagnostics,
    experiences,
    git,
    learning,
    memory,
    porting,
    value_suggestions,
)

__all__ = [
    "browse",
    "capture",
    "code",
    "context",
    "curation",
    "curation_merge",
    "diagnostics",
    "experiences",
    "git",
    "learning",
    "memory",
    "porting",
    "value_suggestions",
]
