"""Jobs that prove the pipeline works: a no-op for latency, and ping for identity and recovery."""

from __future__ import annotations

import asyncio

from learning_memory.shared.contracts.diagnostics import (
    NOOP,
    PING,
    PING_BATCH,
    NoopRequest,
    NoopResponse,
    PingRequest,
    PingResponse,
)
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun


@job(NOOP)
async def noop(run: JobRun, request: NoopRequest) -> NoopResponse:
    return NoopResponse()


@job(PING)
@job(PING_BATCH)
async def ping(run: JobRun, request: PingRequest) -> PingResponse:
    if request.delay_ms:
        total = request.delay_ms / 1000
        steps = max(1, min(20, request.delay_ms // 250))
        await run.report(0, total, "holding the job")
        for step in range(1, steps + 1):
            await asyncio.sleep(total / steps)
            await run.report(total * step / steps, total, "holding the job")
    return PingResponse(worker=run.services.identity, job_id=run.job_id, job_try=run.job_try)
