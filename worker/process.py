"""The worker process: one queue worker per queue in one event loop, plus wake-ups and heartbeat.

arq runs a single queue per ``Worker``: :func:`run_worker_process` builds the services once
and runs a queue worker for each queue until it is cancelled, when it lets running jobs
finish for a grace period and puts the rest back on their queues.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from learning_memory.shared import codec
from learning_memory.shared.arq_backend import ArqRedis, QueueWorker
from learning_memory.shared.keys import Keys, Queue
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings
from learning_memory.worker.arq_jobs import arq_functions
from learning_memory.worker.heartbeat import Heartbeat
from learning_memory.worker.idle_exit import IdleExit
from learning_memory.worker.services import WorkerServices
from learning_memory.worker.wake import listen_for_wakeups

log = get_logger(__name__)

# Fallback poll while idle: deferred retries and missed wake-ups wait at most this long.
IDLE_POLL_S = 2.0
HEALTH_CHECK_INTERVAL_S = 5
SHUTDOWN_GRACE_S = 10.0
KEEP_RESULT_S = 3600


def build_queue_workers(
    redis: ArqRedis, keys: Keys, services: WorkerServices, ctx: dict[str, Any]
) -> dict[Queue, QueueWorker]:
    settings = services.settings
    concurrency = {
        Queue.INTERACTIVE: settings.interactive_concurrency,
        Queue.BATCH: settings.batch_concurrency,
    }
    return {
        queue: QueueWorker(
            arq_functions(queue),
            keys=keys,
            worker_id=services.identity.id,
            queue_name=keys.queue(queue),
            redis_pool=redis,
            ctx=ctx,
            max_jobs=concurrency[queue],
            poll_delay=IDLE_POLL_S,
            health_check_interval=HEALTH_CHECK_INTERVAL_S,
            keep_result=KEEP_RESULT_S,
            job_serializer=codec.dumps,
            job_deserializer=codec.loads,
        )
        for queue in Queue
    }


async def run_worker_process(redis: ArqRedis, settings: Settings, *, exit_when_idle: bool = False) -> None:
    """Serve both queues until cancelled. ``exit_when_idle`` (how a server autostarts a worker):
    leave after ``LMS_WORKER_IDLE_EXIT_S`` with no job and no live session."""
    keys = Keys(settings.namespace)
    services = WorkerServices(settings)
    services.connect(redis, keys)
    # Opens the stores now: a second worker on a locked embedded store stops here, before it
    # registers, with a message saying what to do. The model loads in the background.
    await services.start()
    ctx: dict[str, Any] = {"redis": redis, "keys": keys, "services": services}
    workers = build_queue_workers(redis, keys, services, ctx)

    def wake_all() -> None:
        for worker in workers.values():
            worker.wake.set()

    heartbeat = Heartbeat(
        redis,
        keys,
        services.identity,
        interval_s=settings.heartbeat_interval_s,
        ttl_s=settings.heartbeat_ttl_s,
        on_reclaim=wake_all,
    )
    await heartbeat.beat()
    # The autostart lock only guards start-up: with this worker alive, free it so that a
    # server can start a replacement at once if this worker later dies.
    await redis.delete(keys.autostart_lock)
    log.info(
        "worker.started",
        worker=services.identity.id,
        queues=[w.queue_name for w in workers.values()],
        idle_exit_s=settings.worker_idle_exit_s if exit_when_idle else None,
    )
    events = {worker.queue_name: worker.wake for worker in workers.values()}
    helpers = [
        asyncio.create_task(listen_for_wakeups(redis, keys.wake_channel, events), name="wake-listener"),
        asyncio.create_task(heartbeat.run(), name="heartbeat"),
    ]
    if exit_when_idle:
        idle_s = settings.worker_idle_exit_s
        watch = IdleExit(redis, keys, workers.values(), filling=services.filling_vectors, idle_s=idle_s)
        helpers.append(asyncio.create_task(watch.run(), name="idle-exit"))
    loops = [asyncio.create_task(worker.main(), name=f"queue-{queue}") for queue, worker in workers.items()]
    try:
        await asyncio.gather(*loops)
    except asyncio.CancelledError:
        log.info("worker.stopping", grace_s=SHUTDOWN_GRACE_S)
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*(worker.stop(SHUTDOWN_GRACE_S) for worker in workers.values()))
        raise
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await heartbeat.stop()
        await services.close()
        log.info("worker.stopped", worker=services.identity.id)
