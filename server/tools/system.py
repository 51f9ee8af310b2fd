"""Tools about the server itself: ping (a round trip through the worker) and job status."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.tool_errors import tool
from learning_memory.shared import __version__
from learning_memory.shared.contracts.diagnostics import PING, PingRequest
from learning_memory.shared.errors import NotFoundError

JobId = Annotated[
    str,
    Field(
        min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$", description="The job id a tool returned."
    ),
]


def register(server: MCPServer[AppServices]) -> None:
    @tool(
        server,
        name="ping",
        description=(
            "Check the memory server end to end: a job goes through the queue to a worker and back. "
            "Reports the queue mode (arq or inline), the worker that answered and the round trip."
        ),
    )
    async def ping(
        ctx: Context[AppServices, Any],
        delay_ms: Annotated[
            int, Field(ge=0, le=60_000, description="Hold the job this long on the worker (diagnostics).")
        ] = 0,
    ) -> dict[str, Any]:
        app = app_services(ctx)
        started = time.perf_counter()
        answer = await await_job(ctx, PING, PingRequest(delay_ms=delay_ms))
        return {
            "status": "ok",
            "mode": app.jobs.mode,
            "server_version": __version__,
            "worker": answer.worker.model_dump(mode="json"),
            "job_id": answer.job_id,
            "job_try": answer.job_try,
            "round_trip_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    @tool(
        server,
        name="get_job_status",
        description=(
            "State (queued, in_progress, complete, failed), progress, and result or error of a job. "
            "Use it with the job_id a long-running tool returned instead of its result."
        ),
    )
    async def get_job_status(ctx: Context[AppServices, Any], job_id: JobId) -> dict[str, Any]:
        status = await app_services(ctx).jobs.status(job_id)
        if status.state == "not_found":
            raise NotFoundError(
                f"No job {job_id!r}: it never existed, or its result has expired (kept one hour)."
            )
        return status.model_dump(mode="json", exclude_none=True)
