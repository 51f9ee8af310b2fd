"""Adapts each job spec to an arq function: arq's ctx dict in, the result envelope out.

A try that crashes (anything but a domain error, which is a result) is run again after a
short delay, up to the spec's tries, as the inline transport does.
"""

from __future__ import annotations

from typing import Any

from learning_memory.shared.arq_backend import Function, Retry, func
from learning_memory.shared.contracts import ALL_SPECS
from learning_memory.shared.jobs import RETRY_DEFER_S, JobSpec
from learning_memory.shared.keys import Queue
from learning_memory.shared.log import get_logger
from learning_memory.worker.progress import RedisProgress
from learning_memory.worker.registry import execute, implementations
from learning_memory.worker.services import JobRun

log = get_logger(__name__)


def arq_function(spec: JobSpec[Any, Any]) -> Function:
    async def arq_job(ctx: dict[str, Any], payload: Any) -> dict[str, Any]:
        job_run = JobRun(
            services=ctx["services"],
            job_id=ctx["job_id"],
            job_try=ctx["job_try"],
            report=RedisProgress(ctx["redis"], ctx["keys"], ctx["job_id"]),
        )
        try:
            return await execute(spec, payload, job_run)
        except Exception as exc:
            log.exception("job.try_failed", job=spec.name, job_id=job_run.job_id, job_try=job_run.job_try)
            # arq runs it again, and records the failure once the tries are spent.
            raise Retry(defer=RETRY_DEFER_S * job_run.job_try) from exc

    return func(arq_job, name=spec.name, timeout=spec.timeout_s, max_tries=spec.max_tries)


def arq_functions(queue: Queue | None = None) -> list[Function]:
    """arq functions for one queue's jobs (all jobs when ``queue`` is None)."""
    implementations()  # fail at start-up, not at first job, if a spec has no implementation
    return [arq_function(spec) for spec in ALL_SPECS if queue is None or spec.queue is queue]
