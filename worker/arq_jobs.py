"""Adapts each job spec to an arq function: arq's ctx dict in, the result envelope out."""

from __future__ import annotations

from typing import Any

from arq.worker import Function, func

from shared.contracts import ALL_SPECS
from shared.jobs import JobSpec
from shared.keys import Queue
from worker.context import JobContext
from worker.progress import RedisProgress
from worker.registry import execute, implementations


def arq_function(spec: JobSpec[Any, Any]) -> Function:
    async def run(ctx: dict[str, Any], payload: Any) -> dict[str, Any]:
        job_ctx = JobContext(
            services=ctx["services"],
            job_id=ctx["job_id"],
            job_try=ctx["job_try"],
            report=RedisProgress(ctx["redis"], ctx["keys"], ctx["job_id"]),
        )
        return await execute(spec, payload, job_ctx)

    return func(run, name=spec.name, timeout=spec.timeout_s, max_tries=spec.max_tries)


def arq_functions(queue: Queue | None = None) -> list[Function]:
    """arq functions for one queue's jobs (all jobs when ``queue`` is None)."""
    implementations()  # fail at start-up, not at first job, if a spec has no implementation
    return [arq_function(spec) for spec in ALL_SPECS if queue is None or spec.queue is queue]
