"""Asking the worker to mine a session's log, in the background, never holding up a hook.

Triggered when the agent stops, before a compaction, at the session's end, and when a new
prompt starts if something other than prompts was logged since mining was last asked (a prompt
after a prompt settles nothing, and the job would only compete with the prompt hook's search).
While a mining job for the session is queued or running, another trigger joins it (the next
trigger mines what came after). With no worker or no Redis, nothing is mined now: the log keeps
every event, and the next trigger that reaches a worker mines all of it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.contracts.capture import MINE_SESSION, MineSessionRequest
from learning_memory.shared.errors import LmsError
from learning_memory.shared.log import get_logger

if TYPE_CHECKING:
    from learning_memory.server.capture.project import Place
    from learning_memory.server.services.lifespan import AppServices

log = get_logger(__name__)


async def mine_soon(app: AppServices, session_id: str, where: Place) -> bool:
    """Queue the session's mining (or join the one queued); whether the worker will mine it."""
    path = app.capture.log.path(where.project, session_id)
    if not path.exists():
        return False
    request = MineSessionRequest(log_path=str(path), session_id=session_id, project=where.project)
    try:
        with contextlib.suppress(JobStillRunning):
            await app.jobs.run(
                MINE_SESSION, request, budget_s=0, dedupe_key=f"mine:{where.project}:{session_id}"
            )
    except LmsError as exc:
        log.info("capture.mining_not_queued", session_id=session_id, error=exc.message)
        return False
    app.capture.mined(session_id, where)
    return True
