"""The one way the server runs a job, whatever the queue mode: a transport's ``run()``.

Shaped like an HTTP client's transports: :class:`Transport` is the protocol, and each backend
(:mod:`server.transport.inline`, :mod:`server.transport.arq`) submits, waits within a budget,
joins a job already running under the same dedupe key or id, applies the job's time limit
and tries, relays progress, and hands back the job id when the budget runs out first. A job's
result envelope is decoded here, once: a response, or a raised :class:`LmsError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from learning_memory.shared.errors import from_payload
from learning_memory.shared.jobs import JobProgress, JobSpec, JobStatus

Resp = TypeVar("Resp", bound=BaseModel)
ProgressCallback = Callable[[JobProgress], Awaitable[None]]
Mode = Literal["arq", "inline"]


class JobStillRunning(Exception):
    """The wait budget ran out before the job did; the caller hands back the job id (which
    ``run(..., job_id=...)`` joins again later)."""

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id)
        self.job_id = job_id


class Transport(Protocol):
    mode: Mode

    async def run(
        self,
        spec: JobSpec[Any, Resp],
        request: BaseModel,
        *,
        budget_s: float,
        dedupe_key: str | None = None,
        job_id: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Resp:
        """Run ``spec`` on ``request`` and wait up to ``budget_s`` for its response.

        ``dedupe_key``: join the job last started under this key while it is queued or running,
        rather than starting another. ``job_id``: join that job (an id a
        :class:`JobStillRunning` handed back), or start one under it if none is known. A budget
        of 0 starts the job and raises :class:`JobStillRunning` at once. Domain errors are
        raised as :class:`LmsError`; a job past its time limit as ``JobTimeoutError``.
        """
        ...

    async def status(self, job_id: str) -> JobStatus: ...

    async def worker_info(self) -> list[dict[str, Any]]: ...

    async def close(self) -> None: ...


def decode_envelope(spec: JobSpec[Any, Resp], envelope: Any) -> Resp:
    """``{"ok": ...}`` becomes the spec's response; ``{"error": ...}`` is raised."""
    if isinstance(envelope, dict) and "ok" in envelope:
        return spec.response.model_validate(envelope["ok"])
    raise from_payload(envelope)
