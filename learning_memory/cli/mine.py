"""``learning-memory mine LOG``: mine one session log now (what the SessionEnd hook starts, detached).

The job goes through the same transport as the server's (a worker through Redis, or in this
process in inline mode); mining is idempotent, so running it again changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from learning_memory.composition import in_process_executor
from learning_memory.server.transport import JobStillRunning, create_transport
from learning_memory.shared.contracts.capture import MINE_SESSION, MineSessionRequest, SessionEvent
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.settings import get_settings

MINE_WAIT_S = 300.0


def _first_event(log: Path) -> tuple[Path, SessionEvent]:
    """The log's absolute path (the worker may run elsewhere) and its first event."""
    try:
        with log.open("rb") as handle:
            return log.absolute(), SessionEvent.model_validate_json(handle.readline())
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{log} is not a session log: {exc}") from exc


async def run_mine(log: Path) -> int:
    """Mine now: through a live worker, or in this process in inline mode. With Redis but no
    live worker the job is left queued for the next worker (printed as ``queued``): a session's
    end must not start a worker that would then idle for minutes."""
    log, first = _first_event(log)
    settings = get_settings().model_copy(update={"autostart_worker": False})
    request = MineSessionRequest(log_path=str(log), session_id=first.session_id, project=first.project)
    jobs = await create_transport(settings, in_process_executor)
    key = f"mine:{first.project}:{first.session_id}"
    try:
        if jobs.mode == "arq" and not await jobs.worker_info():
            try:
                await jobs.run(MINE_SESSION, request, budget_s=0, dedupe_key=key)
            except JobStillRunning as queued:
                print(json.dumps({"queued": queued.job_id}))
                return 0
        done = await jobs.run(MINE_SESSION, request, budget_s=MINE_WAIT_S, dedupe_key=key)
    finally:
        await jobs.close()
    print(json.dumps(done.model_dump()))
    return 0
