"""What a job contract is (name, request and response models, queue, time limit), and job status.

The contracts themselves live in ``shared.contracts``, one module per capability. The
server runs ``SPEC`` with a ``SPEC.request`` and gets ``SPEC.response`` back, in any
queue mode; the worker registers one implementation per spec. In inline mode the server runs
them through a :class:`JobExecutor`, which the composition root (``learning_memory.composition``)
takes from the worker: the server never imports the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from learning_memory.shared.keys import Queue

if TYPE_CHECKING:
    from learning_memory.shared.settings import Settings

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


# --- running jobs in this process ------------------------------------------------


class ProgressReporter(Protocol):
    async def __call__(
        self, current: float, total: float | None = None, message: str | None = None
    ) -> None: ...


async def no_progress(current: float, total: float | None = None, message: str | None = None) -> None:
    """For callers that do not watch progress."""


class JobExecutor(Protocol):
    """Runs one try of a job in this process and answers its result envelope (``{"ok": ...}`` or
    ``{"error": ...}``); a crash propagates, for the caller to retry. The worker provides it; the
    server's inline mode uses it."""

    async def execute(
        self, spec: JobSpec[Any, Any], payload: Any, *, job_id: str, job_try: int, report: ProgressReporter
    ) -> dict[str, Any]: ...

    def identity(self) -> WorkerIdentity: ...

    async def close(self) -> None: ...


# What the inline transport is given: it makes the executor on the first job, so a server that
# never runs one in-process never loads the worker's libraries.
ExecutorFactory = Callable[["Settings"], JobExecutor]
