"""What the view's handlers share: its settings, the job transport, the journal reader and the form
token, and the one way a page or form runs a job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.requests import Request

from learning_memory.server.transport import Transport
from learning_memory.server.transport.base import JobStillRunning
from learning_memory.server.ui.journal_view import JournalView
from learning_memory.shared.errors import UnavailableError
from learning_memory.shared.jobs import JobSpec
from learning_memory.shared.settings import Settings

Resp = TypeVar("Resp", bound=BaseModel)

# A page waits this long for a job; a first clustering or a big audit may take longer and says so
# rather than hold the browser.
PAGE_BUDGET_S = 20.0


@dataclass
class UiState:
    settings: Settings
    form_token: str
    journal: JournalView
    transport: Transport | None = None

    @property
    def mode(self) -> str:
        return self.transport.mode if self.transport else "starting"


def ui_state(request: Request) -> UiState:
    state: UiState = request.app.state.ui
    return state


def jobs(request: Request) -> Transport:
    """The view's job transport; UnavailableError while the view is still starting."""
    transport = ui_state(request).transport
    if transport is None:
        raise UnavailableError("the view is still starting; reload in a moment")
    return transport


async def run_job(
    request: Request, spec: JobSpec[Any, Resp], job_request: BaseModel, budget_s: float = PAGE_BUDGET_S
) -> Resp:
    """A job for a page or a form, through the same transport (and so the same jobs) as the tools."""
    transport = jobs(request)
    try:
        return await transport.run(spec, job_request, budget_s=budget_s)
    except JobStillRunning as exc:
        raise UnavailableError(
            f"{spec.name} is still running (job {exc.job_id}); reload the page in a few seconds"
        ) from exc
