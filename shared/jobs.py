"""What a job contract is (name, request and response models, queue, time limit), and job status.

The contracts themselves live in ``shared.contracts``, one module per capability. The
server runs ``SPEC`` with a ``SPEC.request`` and gets ``SPEC.response`` back, in any
queue mode; the worker registers one implementation per spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from learning_memory.shared.keys import Queue

# A try that crashed is run again after this many seconds times the tries so far (in both
# queue modes), up to the spec's ``max_tries``.
RETRY_DEFER_S = 0.5

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


class WorkerIdentity(Contract):
    id: str
    host: str
    pid: int
    version: str
    started_at: datetime


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
