"""Choosing the job transport for the configured queue mode."""

from __future__ import annotations

from redis.exceptions import RedisError

from learning_memory.server.autostart import ensure_worker
from learning_memory.server.transport.arq import ArqTransport, connect
from learning_memory.server.transport.base import JobStillRunning, Transport
from learning_memory.server.transport.inline import InlineTransport
from learning_memory.server.transport.session import keep_session
from learning_memory.shared.errors import UnavailableError
from learning_memory.shared.jobs import ExecutorFactory
from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings

__all__ = ["JobStillRunning", "Transport", "create_transport"]

log = get_logger(__name__)
# `auto` must decide fast: a local Redis answers in well under a millisecond.
AUTO_PROBE_TIMEOUT_S = 0.5


async def _redis_answers(settings: Settings) -> bool:
    redis = connect(settings, connect_timeout_s=AUTO_PROBE_TIMEOUT_S)
    try:
        return bool(await redis.ping())
    except (RedisError, OSError):
        return False
    finally:
        await redis.aclose(close_connection_pool=True)


async def create_transport(settings: Settings, executor: ExecutorFactory | None) -> Transport:
    """The transport for the configured mode; inline mode runs jobs through ``executor``, which
    the composition root takes from the worker (None: a server that cannot run jobs itself)."""
    mode = settings.queue
    if mode == "auto":
        mode = "arq" if await _redis_answers(settings) else "inline"
        log.info("queue.mode_chosen", mode=mode, redis_url=settings.redis_url)
    if mode == "inline":
        if executor is None:
            raise UnavailableError(
                "inline mode runs jobs in this process, but this server was built without the "
                "worker's executor: build it with learning_memory.composition.build_server"
            )
        return InlineTransport(settings, executor)

    redis = connect(settings)

    async def start_worker() -> bool:
        return await ensure_worker(redis, settings) if settings.autostart_worker else False

    transport = ArqTransport(settings, redis, ensure_worker=start_worker)
    # In the background: a Redis that accepts connections but does not answer must not hold the
    # handshake for its socket timeout (a job that needs a worker starts one itself anyway).
    # The session entry keeps an autostarted worker from leaving while this server runs.
    transport.start_in_background(keep_session(redis, Keys(settings.namespace), start_worker))
    return transport
