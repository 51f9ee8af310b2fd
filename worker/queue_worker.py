"""arq's worker, woken by a message instead of sleeping between polls.

arq polls its queue every ``poll_delay`` (0.5 s by default): that sleep is most of an
awaited job's latency, and polling faster burns CPU while idle. Here the worker waits
on an event that the wake listener sets when an enqueue publishes on the wake channel,
with ``poll_delay`` kept only as a slow fallback (deferred retries, a missed message).
When a job ends, the worker pushes its result to the job's ``done`` list so an
awaiting client wakes at once too, and keeps a set of the jobs it runs so that, if it dies, another
worker can reclaim them without waiting for arq's in-progress key to expire.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, cast

from arq.worker import Worker

from shared.keys import Keys

DONE_TTL_S = 600


class QueueWorker(Worker):
    def __init__(self, *args: Any, keys: Keys, worker_id: str, **kwargs: Any) -> None:
        super().__init__(*args, handle_signals=False, **kwargs)
        self.keys = keys
        self.worker_id = worker_id
        self.wake = asyncio.Event()
        self.on_job_start = self._mark_running

    async def main(self) -> None:
        # The pool, ctx and start-up hooks belong to the process supervisor, not to this loop.
        while True:
            # Cleared before polling, so a wake-up that lands during the poll is not lost.
            self.wake.clear()
            await self._poll_iteration()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.poll_delay_s)

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        # A slot is free: jobs left waiting while we were full can start now.
        self.wake.set()

    async def _mark_running(self, ctx: dict[str, Any]) -> None:
        await cast(Awaitable[int], self.pool.sadd(self.keys.running(self.worker_id), ctx["job_id"]))

    async def finish_job(self, job_id: str, finish: bool, result_data: bytes | None, *args: Any) -> None:
        await super().finish_job(job_id, finish, result_data, *args)
        await self._signal(job_id, result_data if finish else None)

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        await super().finish_failed_job(job_id, result_data)
        await self._signal(job_id, result_data or b"{}")

    async def _signal(self, job_id: str, result_data: bytes | None) -> None:
        """Forget the job as running; if it ended, hand its result to whoever awaits it."""
        async with self.pool.pipeline(transaction=False) as pipe:
            pipe.srem(self.keys.running(self.worker_id), job_id)
            if result_data is not None:
                # The result itself, so the waiter needs no second round trip to read it.
                pipe.rpush(self.keys.done(job_id), result_data)
                pipe.expire(self.keys.done(job_id), DONE_TTL_S)
            await pipe.execute()

    async def stop(self, grace_s: float) -> None:
        """Stop taking jobs, let running ones finish for ``grace_s``, then cancel the rest.

        arq puts a cancelled job back on its queue, so another worker runs it again.
        """
        self.allow_pick_jobs = False
        running = [t for t in self.tasks.values() if not t.done()]
        if running:
            _, pending = await asyncio.wait(running, timeout=grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
