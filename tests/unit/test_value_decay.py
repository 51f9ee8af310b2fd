"""Values weigh less as they age without new evidence (worker.learning.decay): the pure decay,
the evidence an experience stored later gives, and list_values' age, support and weight."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.shared.contracts.experiences import PersistExperienceRequest
from learning_memory.shared.contracts.learning import VALUES_COLLECTION, ListValuesRequest
from learning_memory.worker.jobs.experiences import axis_texts, persist_experience
from learning_memory.worker.jobs.learning import VALUE_INDEXES, list_values
from learning_memory.worker.learning.decay import age_support_weight, decayed_weight, note_support
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import CollectionSpec, PointData
from tests.helpers import job_run
from tests.learning_data import ghap_entry

NOW = datetime.now(UTC)
DIMENSION = 384
OLD = "00000000-0000-4000-8000-000000000001"
NEW = "00000000-0000-4000-8000-000000000002"


def unit_vector(index: int) -> list[float]:
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[index] = 1.0
    return vector.tolist()


def _since_import() -> float:
    """Days since NOW (the suite may run this module many minutes after importing it), rounded up
    as list_values rounds ages."""
    return round((datetime.now(UTC) - NOW).total_seconds() / 86_400, 2) + 0.01


def value_payload(days_ago: float, size: int, members: list[str] | None = None) -> dict[str, Any]:
    at = NOW - timedelta(days=days_ago)
    return {
        "text": f"a value of {size}",
        "axis": "full",
        "cluster_id": "cluster_full_0",
        "cluster_size": size,
        "similarity_to_centroid": 0.9,
        "created_at": at.isoformat(),
        "created_ts": at.timestamp(),
        "evidence_ts": at.timestamp(),
        "support": size,
        "clustering_id": "c1",
        "member_ghap_ids": json.dumps(members or []),
        "centroid_distance": 0.2,
        "threshold_distance": 0.5,
    }


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        store = await run.services.collection(CollectionSpec(VALUES_COLLECTION, DIMENSION, VALUE_INDEXES))
        await store.upsert(
            VALUES_COLLECTION,
            [
                PointData(OLD, unit_vector(0), value_payload(180, 10, members=["member"])),
                PointData(NEW, unit_vector(1), value_payload(0, 6)),
            ],
        )
        yield run


def test_the_weight_halves_each_half_life() -> None:
    assert decayed_weight(0, 90) == 1.0
    assert decayed_weight(-3, 90) == 1.0  # a clock a little ahead is not a bonus
    assert decayed_weight(90, 90) == pytest.approx(0.5)
    assert decayed_weight(180, 90) == pytest.approx(0.25)
    assert decayed_weight(45, 90) > decayed_weight(46, 90) > 0


def test_age_runs_from_the_latest_evidence_and_old_values_read() -> None:
    payload = value_payload(180, 10)
    age, support, weight = age_support_weight(
        {**payload, "evidence_ts": (NOW - timedelta(days=9)).timestamp()}, 90, NOW
    )
    assert (round(age), support, round(weight, 3)) == (9, 10, round(0.5 ** (9 / 90), 3))
    # Stored before the evidence was tracked: aged from its creation, supported by its cluster.
    legacy = {key: value for key, value in payload.items() if key not in ("evidence_ts", "support")}
    age, support, weight = age_support_weight(legacy, 90, NOW)
    assert (round(age), support, round(weight, 3)) == (180, 10, 0.25)


async def test_list_values_shows_age_support_and_weight_and_ranks_by_them(run: JobRun) -> None:
    listed = (await list_values(run, ListValuesRequest())).results
    # The bigger cluster came first by size; half a year without evidence puts it behind.
    assert [value.id for value in listed] == [NEW, OLD]
    old = listed[1]
    assert (round(old.age_days), old.support, round(old.weight, 2)) == (180, 10, 0.25)
    assert (listed[0].age_days <= _since_import(), listed[0].support, listed[0].weight) == (True, 6, 1.0)


async def test_an_experience_close_to_a_value_is_new_evidence(run: JobRun) -> None:
    store = await run.services.vectors()
    # Far from both values (orthogonal: distance √2, above their threshold): nothing changes.
    assert await note_support(store, "full", "far", unit_vector(5), NOW) == []
    assert await note_support(store, "strategy", "other-axis", unit_vector(0), NOW) == []
    # On the old value: its clock restarts and its support grows.
    assert await note_support(store, "full", "new-experience", unit_vector(0), NOW) == [OLD]
    listed = {value.id: value for value in (await list_values(run, ListValuesRequest())).results}
    assert (listed[OLD].support, listed[OLD].weight, listed[OLD].age_days <= _since_import()) == (
        11,
        1.0,
        True,
    )
    # Stored again (mined again): counted once.
    assert await note_support(store, "full", "new-experience", unit_vector(0), NOW) == []
    # A member of its cluster seen again later refreshes it without counting twice.
    later = NOW + timedelta(days=1)
    assert await note_support(store, "full", "member", unit_vector(0), later) == [OLD]
    [point] = await store.get(VALUES_COLLECTION, [OLD])
    assert (point.payload["support"], point.payload["evidence_ts"]) == (11, later.timestamp())


async def test_persisting_an_experience_gives_evidence_to_the_values_near_it(run: JobRun) -> None:
    entry = ghap_entry(generated_entries(1, seed=3)[0], 0)
    resolution = entry.resolution
    assert resolution is not None
    [vector] = await (await run.services.embedder()).embed([axis_texts(entry, resolution)["full"]])
    store = await run.services.vectors()
    await store.upsert(VALUES_COLLECTION, [PointData(OLD, vector, value_payload(180, 10))])
    await persist_experience(run, PersistExperienceRequest(entry=entry))
    [point] = await store.get(VALUES_COLLECTION, [OLD])
    assert point.payload["support"] == 11
    assert point.payload["evidence_ts"] == max(NOW - timedelta(days=180), resolution.resolved_at).timestamp()
