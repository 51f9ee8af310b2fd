"""The worker's jobs run inside another process: what the server's inline mode is given.

The services (and through them torch, the vector engine and the rest) are built on the first job,
never when the server starts: a single user's session pays for them only when a tool needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from learning_memory.shared.jobs import JobSpec, ProgressReporter, WorkerIdentity
from learning_memory.shared.settings import Settings

if TYPE_CHECKING:
    from learning_memory.worker.services import WorkerServices


class InProcessExecutor:
    """A :class:`learning_memory.shared.jobs.JobExecutor` over this process's worker services."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._services: WorkerServices | None = None

    def _get_services(self) -> WorkerServices:
        if self._services is None:
            from learning_memory.worker.allocator import tune
            from learning_memory.worker.services import WorkerServices

            tune()  # the worker's threads now run in this process
            self._services = WorkerServices(self._settings)
        return self._services

    async def execute(
        self, spec: JobSpec[Any, Any], payload: Any, *, job_id: str, job_try: int, report: ProgressReporter
    ) -> dict[str, Any]:
        from learning_memory.worker.registry import execute
        from learning_memory.worker.services import JobRun

        run = JobRun(services=self._get_services(), job_id=job_id, job_try=job_try, report=report)
        return await execute(spec, payload, run)

    def identity(self) -> WorkerIdentity:
        return self._get_services().identity

    async def close(self) -> None:
        if self._services is not None:
            await self._services.close()
