"""What the context jobs do with a stale experience: one whose code changed is put forward with
a note; one whose code is gone is not put forward at all (prompt context, premortem), and is
still found by search."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from learning_memory.shared.contracts.context import AssembleContextRequest, PremortemRequest
from learning_memory.shared.contracts.experiences import (
    PersistExperienceRequest,
    SearchExperiencesRequest,
    collection_for,
    point_id,
)
from learning_memory.worker.jobs.context import assemble_context, premortem_warnings
from learning_memory.worker.jobs.experiences import persist_experience, search_experiences
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData
from tests.helpers import job_run
from tests.unit.test_experience_jobs import make_entry

GOAL = "Fix the flaky login test"


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


async def mark(run: JobRun, ghap_id: str, state: str | None) -> None:
    store = await run.services.vectors()
    name = collection_for("full")
    [record] = await store.get(name, [point_id(ghap_id, "full")], with_vectors=True)
    assert record.vector is not None
    await store.upsert(name, [PointData(record.id, record.vector, {**record.payload, "stale": state})])


async def test_changed_is_noted_and_gone_is_left_out_but_found(run: JobRun) -> None:
    entry = make_entry(goal=GOAL, status="falsified", result="Still flaky")
    await persist_experience(run, PersistExperienceRequest(entry=entry))
    context = AssembleContextRequest(query=GOAL, budget_tokens=2_000, min_score=0.0)
    premortem = PremortemRequest(goal=GOAL, min_score=0.0)

    await mark(run, entry.id, "changed")
    [item] = (await assemble_context(run, context)).items
    assert item.text.endswith("(code changed since)")
    [warning] = (await premortem_warnings(run, premortem)).warnings
    assert warning.result == "Still flaky (code changed since)"

    await mark(run, entry.id, "gone")
    assert (await assemble_context(run, context)).items == []
    assert (await premortem_warnings(run, premortem)).warnings == []
    [hit] = (await search_experiences(run, SearchExperiencesRequest(query=GOAL))).results
    assert (hit.ghap_id, hit.stale) == (entry.id, "gone")
