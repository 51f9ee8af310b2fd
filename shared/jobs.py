"""Job contracts: each job's name, request and response models, queue and time limit.

The server calls ``JobClient.run(SPEC, request)`` and gets ``SPEC.response`` back, in
any queue mode; the worker registers one implementation per spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from shared.keys import Queue

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)


@dataclass(frozen=True)
class JobSpec(Generic[Req, Resp]):
    name: str
    request: type[Req]
    response: type[Resp]
    queue: Queue
    timeout_s: float
    max_tries: int = 3


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- diagnostics ---------------------------------------------------------------


class NoopRequest(Contract):
    pass


class NoopResponse(Contract):
    pass


class WorkerIdentity(Contract):
    id: str
    host: str
    pid: int
    version: str
    started_at: datetime


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

ALL_SPECS: tuple[JobSpec[Any, Any], ...] = (NOOP, PING, PING_BATCH)
SPECS_BY_NAME: dict[str, JobSpec[Any, Any]] = {spec.name: spec for spec in ALL_SPECS}


# --- job status ------------------------------------------------------------------

JobState = Literal["queued", "in_progress", "complete", "failed", "not_found"]


class JobProgress(Contract):
    current: float
    total: float | None = None
    message: str | None = None


class JobStatus(Contract):
    job_id: str
    state: JobState
    function: str | None = None
    tries: int | None = None
    progress: JobProgress | None = None
    result: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
