"""Tools about the server itself: ping (a round trip through the worker) and job status."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.tool_answers import Answer
from learning_memory.server.tool_registry import tool
from learning_memory.server.transport.base import Mode
from learning_memory.shared import __version__
from learning_memory.shared.contracts.diagnostics import PING, PingRequest, PingResponse
from learning_memory.shared.errors import NotFoundError
from learning_memory.shared.jobs import JobStatus

JobId = Annotated[
    str,
    Field(
        min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$", description="The job id a tool returned."
    ),
]


class _Server(Answer):
    status: Literal["ok"] = "ok"
    mode: Mode
    server_version: str


class Pong(_Server, of=PingResponse):
    """ping's answer: this server, the worker that ran the job, and the round trip."""

    round_trip_ms: float


@tool(
    "ping",
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
) -> Pong:
    app = app_services(ctx)
    started = time.perf_counter()
    answer = await await_job(ctx, PING, PingRequest(delay_ms=delay_ms))
    return Pong.pick(
        answer,
        mode=app.jobs.mode,
        server_version=__version__,
        round_trip_ms=round((time.perf_counter() - started) * 1000, 3),
    )


@tool(
    "get_job_status",
    description=(
        "State (queued, in_progress, complete, failed), progress, and result or error of a job. "
        "Use it with the job_id a long-running tool returned instead of its result."
    ),
    instant=True,
    omit_none=True,
)
async def get_job_status(ctx: Context[AppServices, Any], job_id: JobId) -> JobStatus:
    status = await app_services(ctx).jobs.status(job_id)
    if status.state == "not_found":
        raise NotFoundError(
            f"No job {job_id!r}: it never existed, or its result has expired (kept one hour)."
        )
    return status
