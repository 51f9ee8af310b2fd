"""The worker's entry point: ``learning-memory worker``.

Settings are read first, so a bad ``LMS_*`` value stops the worker before it starts.
SIGTERM and SIGINT stop it gracefully: running jobs get a grace period, the rest go back
on their queues for another worker.
"""

from __future__ import annotations

import asyncio
import signal

from redis.exceptions import RedisError

from learning_memory.shared import arq_backend
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import configure_logging
from learning_memory.shared.settings import Settings, get_settings
from learning_memory.shared.state import live_workers
from learning_memory.worker.allocator import tune


def run(exit_when_idle: bool = False) -> int:
    settings = get_settings()
    configure_logging(settings.log_level)
    tune()
    asyncio.run(_serve(settings, exit_when_idle))
    return 0


async def _serve(settings: Settings, exit_when_idle: bool) -> None:
    from learning_memory.worker.process import run_worker_process

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, main.cancel)
    redis = arq_backend.connect(settings.redis_url)
    try:
        await run_worker_process(redis, settings, exit_when_idle=exit_when_idle)
    except asyncio.CancelledError:
        pass  # asked to stop: run_worker_process has stopped its queue workers
    finally:
        await redis.aclose(close_connection_pool=True)


def check() -> int:
    """0 when a worker of this namespace beats in Redis, else 1: a container's health check."""
    settings = get_settings()

    async def any_alive() -> bool:
        redis = arq_backend.connect(settings.redis_url)
        try:
            return bool(await live_workers(redis, Keys(settings.namespace)))
        except (RedisError, OSError):
            return False
        finally:
            await redis.aclose(close_connection_pool=True)

    return 0 if asyncio.run(any_alive()) else 1
