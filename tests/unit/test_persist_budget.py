"""resolve_ghap's persistence within a time budget: a job still queued or running when the budget
ends is handed back rather than waited for, and a failing one is retried within the budget."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

from learning_memory.server.services import persistence
from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.errors import UnavailableError
from learning_memory.shared.jobs import JobSpec
from tests.unit.test_experience_jobs import make_entry


class _Jobs:
    """A transport whose jobs never finish, or always fail."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.submitted = 0
        self.waits: list[float] = []

    async def run(
        self,
        spec: JobSpec[Any, Any],
        request: BaseModel,
        *,
        budget_s: float,
        job_id: str | None = None,
        **_: Any,
    ) -> Any:
        if job_id is None:
            self.submitted += 1
            job_id = f"job-{self.submitted}"
        self.waits.append(budget_s)
        if self.fail:
            raise UnavailableError("the worker is away")
        raise JobStillRunning(job_id)


async def test_a_job_still_waiting_as_the_budget_ends_is_handed_back_not_queued_again() -> None:
    jobs = _Jobs()
    with pytest.raises(JobStillRunning) as raised:
        await persistence.persist(jobs, make_entry(), retry_delays=(0.01, 0.02), budget_s=0.0)  # type: ignore[arg-type]
    assert raised.value.job_id == "job-1" and jobs.submitted == 1
    assert jobs.waits == [0.0]  # no attempt outlives the budget, and no retry starts past it


async def test_failures_are_retried_within_the_budget_then_reported() -> None:
    jobs = _Jobs(fail=True)
    started = time.monotonic()
    with pytest.raises(UnavailableError):
        await persistence.persist(jobs, make_entry(), retry_delays=(0.01, 0.02, 60.0), budget_s=5.0)  # type: ignore[arg-type]
    assert jobs.submitted == 3  # the 60 s retry would end past the budget: not started
    assert time.monotonic() - started < 5.0


async def test_without_a_budget_every_retry_runs() -> None:
    jobs = _Jobs(fail=True)
    with pytest.raises(UnavailableError):
        await persistence.persist(jobs, make_entry(), retry_delays=(0.01, 0.01, 0.01))  # type: ignore[arg-type]
    assert jobs.submitted == 4
