"""Running a job for a tool: progress relayed to the client while it runs, within the wait budget."""

from __future__ import annotations

from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from learning_memory.server.services.lifespan import AppServices, app_services
from learning_memory.shared.jobs import JobProgress, JobSpec

Resp = TypeVar("Resp", bound=BaseModel)


async def await_job(
    ctx: Context[AppServices, Any],
    spec: JobSpec[Any, Resp],
    request: BaseModel,
    *,
    dedupe_key: str | None = None,
) -> Resp:
    """Run a job for a tool, relaying its progress to the client while it runs. With a
    ``dedupe_key``, a job already queued or running under that key is joined, not repeated.

    A job that outlasts ``LMS_TOOL_WAIT_S`` raises ``JobStillRunning``: the tool then answers
    "running" with the job's id (``server.tool_errors``)."""
    app = app_services(ctx)

    async def relay(progress: JobProgress) -> None:
        await ctx.report_progress(progress.current, progress.total, progress.message)

    return await app.jobs.run(
        spec, request, budget_s=app.settings.tool_wait_s, dedupe_key=dedupe_key, on_progress=relay
    )
