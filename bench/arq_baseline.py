"""A plain arq worker with arq's default settings: the baseline the queue benchmark compares against.

Run as ``arq bench.arq_baseline.BaselineSettings``. Only what a worker cannot do without
is set (its function, queue and Redis); everything else, notably ``poll_delay`` (0.5 s),
pickle serialisation and the health-check interval, is left at arq's defaults.
The queue comes from ``BENCH_ARQ_QUEUE`` so concurrent runs never take each other's jobs.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from arq.connections import RedisSettings

QUEUE_ENV = "BENCH_ARQ_QUEUE"
REDIS_URL_ENV = "BENCH_REDIS_URL"
FUNCTION_NAME = "noop"


async def noop(ctx: dict[str, Any]) -> None:
    """Does nothing, so a round trip measures the queue alone."""


class BaselineSettings:
    functions: ClassVar[list[Any]] = [noop]
    # Not arq's "arq:queue": a baseline must never pick up someone else's jobs.
    queue_name = os.environ.get(QUEUE_ENV, "bench:arq-baseline")
    redis_settings = RedisSettings.from_dsn(os.environ.get(REDIS_URL_ENV, "redis://127.0.0.1:6379/13"))
