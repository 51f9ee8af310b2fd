"""The one way the server runs a job, whatever the queue mode."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from shared.errors import InternalError, JobTimeoutError, LmsError, from_payload
from shared.jobs import JobProgress, JobSpec, JobStatus

Resp = TypeVar("Resp", bound=BaseModel)
ProgressCallback = Callable[[JobProgress], Awaitable[None]]
Mode = Literal["arq", "inline"]


class JobStillRunning(Exception):
    """The wait budget ran out before the job did; the caller should hand back the job id."""

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        self.job_id = job_id


class JobClient(Protocol):
    mode: Mode

    async def submit(
        self, spec: JobSpec[Any, Any], request: BaseModel, *, job_id: str | None = None
    ) -> str: ...

    async def submit_once(self, spec: JobSpec[Any, Any], request: BaseModel, *, key: str) -> tuple[str, bool]:
        """Submit, unless the job last submitted under ``key`` is still queued or running: then
        return that one. The bool says whether an existing job was joined."""
        ...

    async def wait(
        self,
        spec: JobSpec[Any, Resp],
        job_id: str,
        *,
        timeout_s: float,
        on_progress: ProgressCallback | None = None,
    ) -> Resp: ...

    async def status(self, job_id: str) -> JobStatus: ...

    async def worker_info(self) -> list[dict[str, Any]]: ...

    async def close(self) -> None: ...


async def run_job(
    client: JobClient,
    spec: JobSpec[Any, Resp],
    request: BaseModel,
    *,
    timeout_s: float,
    on_progress: ProgressCallback | None = None,
) -> Resp:
    """Submit and await; raises JobStillRunning when ``timeout_s`` runs out first."""
    job_id = await client.submit(spec, request)
    return await client.wait(spec, job_id, timeout_s=timeout_s, on_progress=on_progress)


def decode_envelope(spec: JobSpec[Any, Resp], envelope: Any) -> Resp:
    """``{"ok": ...}`` becomes the spec's response; ``{"error": ...}`` is raised."""
    if isinstance(envelope, dict) and "ok" in envelope:
        return spec.response.model_validate(envelope["ok"])
    raise from_payload(envelope)


def failure_error(spec_name: str, failure: Any, tries: int | None) -> LmsError:
    """The error for a job that arq recorded as failed (timeout, retries spent, a crash)."""
    kind = failure.get("__exception__") if isinstance(failure, dict) else None
    if kind == "TimeoutError":
        return JobTimeoutError(f"job {spec_name} ran past its time limit")
    if kind == "JobExecutionFailed" and "retries exceeded" in str(failure.get("message", "")):
        return InternalError(f"job {spec_name} failed on every try ({tries}); the worker log has the details")
    return InternalError(f"job {spec_name} failed; the worker log has the details")
