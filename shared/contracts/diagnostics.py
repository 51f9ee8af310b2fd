"""Diagnostics: a no-op for latency, and ping for identity and recovery."""

from __future__ import annotations

from pydantic import Field

from learning_memory.shared.jobs import Contract, JobSpec, WorkerIdentity
from learning_memory.shared.keys import Queue


class NoopRequest(Contract):
    pass


class NoopResponse(Contract):
    pass


class PingRequest(Contract):
    # Holding the job lets a caller watch progress, job status and crash recovery.
    delay_ms: int = Field(default=0, ge=0, le=60_000)


class PingResponse(Contract):
    worker: WorkerIdentity
    job_id: str
    job_try: int


NOOP: JobSpec[NoopRequest, NoopResponse] = JobSpec(
    "noop", NoopRequest, NoopResponse, Queue.INTERACTIVE, timeout_s=10
)
PING: JobSpec[PingRequest, PingResponse] = JobSpec(
    "ping", PingRequest, PingResponse, Queue.INTERACTIVE, timeout_s=90
)
# The same diagnostic on the batch queue: proves a long batch job never delays a search.
PING_BATCH: JobSpec[PingRequest, PingResponse] = JobSpec(
    "ping_batch", PingRequest, PingResponse, Queue.BATCH, timeout_s=90
)
