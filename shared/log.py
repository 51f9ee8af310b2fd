"""structlog set-up: JSON lines on stderr, for our code and for the libraries' stdlib logs.

stdout belongs to the MCP protocol, so nothing here may ever write to it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Route structlog and stdlib logging to one JSON handler on stderr (or ``stream``)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # Per-request chatter from the HTTP stack is noise at INFO.
    # arq's per-job lines echo payloads (memories, code) and cost time on every job: DEBUG only.
    for noisy in ("httpx", "httpcore", "uvicorn.access", "arq.worker", "arq.jobs", "arq.connections"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

    structlog.configure(
        processors=[
            *_SHARED,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
