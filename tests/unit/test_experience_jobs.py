"""persist_experience and search_experiences, called directly and through the registry
(inline settings, hashing embedder, the real embedded vector store)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.contracts.experiences import (
    AXES,
    PERSIST_EXPERIENCE,
    SEARCH_EXPERIENCES,
    Anchor,
    GhapEntry,
    Iteration,
    Lesson,
    PersistExperienceRequest,
    Resolution,
    RootCause,
    SearchExperiencesRequest,
    collection_for,
    point_id,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.jobs.experiences import axis_texts, persist_experience, search_experiences
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData
from tests.helpers import job_run

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


def make_entry(
    *,
    goal: str = "Fix the flaky login test",
    hypothesis: str = "The session cookie expires between requests",
    action: str = "Freeze the clock in the test fixture",
    prediction: str = "The test passes ten times in a row",
    domain: str = "testing",
    strategy: str = "check-assumptions",
    status: str = "confirmed",
    result: str = "Passed fifty runs",
    surprise: str | None = None,
    root_cause: RootCause | None = None,
    lesson: Lesson | None = None,
    tier: str = "silver",
    resolved: bool = True,
    minutes: int = 0,
) -> GhapEntry:
    created = T0 + timedelta(minutes=minutes)
    resolution = Resolution(
        status=status,
        result=result,
        surprise=surprise,
        root_cause=root_cause,
        lesson=lesson,
        confidence_tier=tier,
        resolved_at=created + timedelta(minutes=30),
        resolved_in_session="session-2",
    )
    return GhapEntry(
        id=f"ghap_{uuid.uuid4().hex[:12]}",
        session_id="session-1",
        domain=domain,
        strategy=strategy,
        goal=goal,
        hypothesis=hypothesis,
        action=action,
        prediction=prediction,
        created_at=created,
        updated_at=created,
        resolution=resolution if resolved else None,
    )


FULL = make_entry(
    surprise="The clock was already frozen by a session-wide autouse fixture",
    root_cause=RootCause(category="test-isolation", description="Fixtures leaked state between tests"),
    lesson=Lesson(what_worked="Resetting the fixture scope", takeaway="Check autouse fixtures first"),
    tier="gold",
)


async def persist(run: JobRun, entry: GhapEntry) -> list[str]:
    response = await persist_experience(run, PersistExperienceRequest(entry=entry))
    assert response.ghap_id == entry.id
    return list(response.axes)


async def search(run: JobRun, query: str, **arguments: Any) -> list[Any]:
    response = await search_experiences(run, SearchExperiencesRequest(query=query, **arguments))
    return list(response.results)


async def counts(run: JobRun) -> dict[str, int]:
    store = await run.services.vectors()
    return {
        axis: await store.count(collection_for(axis))
        for axis in AXES
        if await store.collection_exists(collection_for(axis))
    }


# --- persist -----------------------------------------------------------------------


async def test_plain_entry_is_stored_on_full_and_strategy_only(run: JobRun) -> None:
    assert await persist(run, make_entry()) == ["full", "strategy"]
    assert await counts(run) == {"full": 1, "strategy": 1}


async def test_entry_with_surprise_and_root_cause_is_stored_on_all_axes(run: JobRun) -> None:
    assert await persist(run, FULL) == ["full", "strategy", "surprise", "root_cause"]
    assert await counts(run) == dict.fromkeys(AXES, 1)


async def test_blank_surprise_is_no_surprise_axis(run: JobRun) -> None:
    assert await persist(run, make_entry(surprise="   ")) == ["full", "strategy"]


async def test_persisting_twice_replaces_never_duplicates(run: JobRun) -> None:
    await persist(run, FULL)
    await persist(run, make_entry(goal="Another", minutes=5))
    before = await counts(run)
    await persist(run, FULL)
    # Through the registry too, as a retried queue job would arrive.
    payload = PersistExperienceRequest(entry=FULL).model_dump(mode="json")
    assert (await execute(PERSIST_EXPERIENCE, payload, run))["ok"]["axes"] == list(AXES)
    assert await counts(run) == before == {"full": 2, "strategy": 2, "surprise": 1, "root_cause": 1}


async def test_repersisting_without_surprise_drops_the_old_surprise_point(run: JobRun) -> None:
    await persist(run, FULL)
    changed = FULL.model_copy(update={"resolution": FULL.resolution.model_copy(update={"surprise": None})})  # type: ignore[union-attr]
    assert await persist(run, changed) == ["full", "strategy", "root_cause"]
    assert await counts(run) == {"full": 1, "strategy": 1, "surprise": 0, "root_cause": 1}


async def test_payload_carries_the_whole_experience(run: JobRun) -> None:
    entry = FULL.model_copy(
        update={
            "iterations": [
                Iteration(
                    hypothesis="h0", action="a0", prediction="p0", strategy="trial-and-error", updated_at=T0
                )
            ]
        }
    )
    await persist(run, entry)
    store = await run.services.vectors()
    for axis in AXES:
        [record] = await store.get(collection_for(axis), [point_id(entry.id, axis)])
        assert record.payload == {
            "ghap_id": entry.id,
            "axis": axis,
            "domain": "testing",
            "strategy": "check-assumptions",
            "goal": entry.goal,
            "hypothesis": entry.hypothesis,
            "action": entry.action,
            "prediction": entry.prediction,
            "iteration_count": 2,
            "outcome_status": "confirmed",
            "outcome_result": "Passed fifty runs",
            "surprise": "The clock was already frozen by a session-wide autouse fixture",
            "root_cause": {
                "category": "test-isolation",
                "description": "Fixtures leaked state between tests",
            },
            "lesson": {
                "what_worked": "Resetting the fixture scope",
                "takeaway": "Check autouse fixtures first",
            },
            "confidence_tier": "gold",
            "evidence": [],
            "weight": 1.0,
            "created_at": T0.isoformat(),
            "created_ts": T0.timestamp(),
            "resolved_at": (T0 + timedelta(minutes=30)).isoformat(),
            "resolved_ts": (T0 + timedelta(minutes=30)).timestamp(),
            "source": "agent",
            "anchors": [],
            "anchor_files": [],
            "stale": None,
            "occurrences": 1,
            "last_seen": None,
            "project": None,
        }


async def test_payload_of_a_plain_entry_has_nones_and_its_tier_weight(run: JobRun) -> None:
    entry = make_entry(status="abandoned", tier="abandoned")
    await persist(run, entry)
    store = await run.services.vectors()
    [record] = await store.get(collection_for("full"), [point_id(entry.id, "full")])
    assert record.payload["surprise"] is None
    assert record.payload["root_cause"] is None
    assert record.payload["lesson"] is None
    assert record.payload["weight"] == 0.2
    assert record.payload["iteration_count"] == 1


async def test_auto_entry_carries_its_source_anchors_and_occurrences_into_hits(run: JobRun) -> None:
    seen = T0 + timedelta(days=2)
    entry = make_entry(goal="make test_login pass", status="confirmed", tier="auto").model_copy(
        update={
            "source": "auto",
            "anchors": [Anchor(file="src/app.py", symbol="login", commit="a" * 40), Anchor(file="README")],
            "occurrences": 3,
            "last_seen": seen,
            "project": "github.com/acme/app",
        }
    )
    await persist(run, entry)
    store = await run.services.vectors()
    [record] = await store.get(collection_for("full"), [point_id(entry.id, "full")])
    assert record.payload["weight"] == 0.4  # below what an agent wrote, above abandoned
    [hit] = await search(run, "make test_login pass")
    assert hit.source == "auto" and hit.confidence_tier == "auto"
    assert hit.anchors == entry.anchors
    assert hit.occurrences == 3 and hit.last_seen == seen and hit.project == "github.com/acme/app"


async def test_points_stored_before_the_source_fields_still_read(run: JobRun) -> None:
    await persist(run, LOGIN_OLD)
    store = await run.services.vectors()
    [record] = await store.get(collection_for("full"), [point_id(LOGIN_OLD.id, "full")], with_vectors=True)
    old = {
        key: value
        for key, value in record.payload.items()
        if key not in ("source", "anchors", "anchor_files", "stale", "occurrences", "last_seen", "project")
    }
    assert record.vector is not None
    await store.upsert(collection_for("full"), [PointData(record.id, record.vector, old)])
    [hit] = await search(run, LOGIN_OLD.goal)
    defaults: tuple[object, ...] = ("agent", [], 1, None, None, None)
    assert (hit.source, hit.anchors, hit.occurrences, hit.last_seen, hit.project, hit.stale) == defaults


LOGIN_OLD = make_entry(goal="An experience stored by an earlier version")


def test_axis_texts_say_what_each_axis_is_about() -> None:
    assert FULL.resolution is not None
    texts = axis_texts(FULL, FULL.resolution)
    assert texts["full"] == (
        "Goal: Fix the flaky login test\n"
        "Hypothesis: The session cookie expires between requests\n"
        "Action: Freeze the clock in the test fixture\n"
        "Prediction: The test passes ten times in a row\n"
        "Outcome: confirmed, Passed fifty runs\n"
        "Surprise: The clock was already frozen by a session-wide autouse fixture\n"
        "Root cause: test isolation: Fixtures leaked state between tests\n"
        "Lesson: Resetting the fixture scope; Check autouse fixtures first"
    )
    assert texts["strategy"] == (
        "Strategy: check assumptions\nAction: Freeze the clock in the test fixture\n"
        "What worked: Resetting the fixture scope"
    )
    assert texts["surprise"] == (
        "Surprise: The clock was already frozen by a session-wide autouse fixture\nResult: Passed fifty runs"
    )
    assert texts["root_cause"] == "test isolation: Fixtures leaked state between tests"


def test_axis_texts_leave_out_what_is_missing() -> None:
    entry = make_entry(lesson=Lesson(what_worked="  ", takeaway="Read the docs"))
    assert entry.resolution is not None
    texts = axis_texts(entry, entry.resolution)
    assert set(texts) == {"full", "strategy"}
    assert "Surprise" not in texts["full"] and "Root cause" not in texts["full"]
    assert texts["full"].endswith("Lesson: Read the docs")
    assert "What worked" not in texts["strategy"]


async def test_unresolved_entry_is_refused(run: JobRun) -> None:
    entry = make_entry(resolved=False)
    with pytest.raises(ValidationError, match="not resolved"):
        await persist(run, entry)
    envelope = await execute(PERSIST_EXPERIENCE, {"entry": entry.model_dump(mode="json")}, run)
    assert envelope["error"]["type"] == "validation_error"
    assert not await (await run.services.vectors()).collection_exists(collection_for("full"))


async def test_invalid_request_is_a_validation_error(run: JobRun) -> None:
    envelope = await execute(PERSIST_EXPERIENCE, {"entry": {"id": "x"}}, run)
    assert envelope["error"]["type"] == "validation_error"
    envelope = await execute(SEARCH_EXPERIENCES, {"query": "x", "axis": "colour"}, run)
    assert envelope["error"]["type"] == "validation_error"


# --- search ------------------------------------------------------------------------

DATABASE = make_entry(
    goal="Speed up the slow dashboard database query",
    hypothesis="A missing index on orders.customer_id forces a sequential scan",
    action="Run EXPLAIN ANALYZE and add the index",
    prediction="Query time drops below 50 ms",
    domain="performance",
    strategy="root-cause-analysis",
    result="Query time dropped to 12 ms",
    surprise="The planner ignored the index until statistics were refreshed with ANALYZE",
    root_cause=RootCause(
        category="missing-knowledge", description="Stale planner statistics after bulk load"
    ),
    lesson=Lesson(what_worked="Refreshing planner statistics"),
    tier="gold",
    minutes=1,
)
DOCKER = make_entry(
    goal="Make the docker build work on the CI runner",
    hypothesis="The base image tag moved to a new Python version",
    action="Pin the base image digest in the Dockerfile",
    prediction="The CI build turns green",
    domain="configuration",
    strategy="trial-and-error",
    status="falsified",
    result="Still failing: the runner lacked disk space",
    surprise="Docker layer cache filled the runner disk completely",
    root_cause=RootCause(
        category="environment-issue", description="Runner disk full of dangling docker layers"
    ),
    minutes=2,
)
LOGIN = make_entry(minutes=3)  # testing, check-assumptions, no surprise or root cause


@pytest.fixture
async def stored(run: JobRun) -> JobRun:
    for entry in (DATABASE, DOCKER, LOGIN):
        await persist(run, entry)
    return run


@pytest.mark.parametrize(
    ("axis", "query", "expected"),
    [
        ("full", "slow dashboard database query index", DATABASE),
        ("full", "docker build CI runner", DOCKER),
        ("full", "flaky login test session cookie", LOGIN),
        ("strategy", "trial and error pinning the base image digest", DOCKER),
        ("strategy", "check assumptions freeze the clock", LOGIN),
        ("surprise", "planner ignored the index statistics", DATABASE),
        ("surprise", "layer cache filled the disk", DOCKER),
        ("root_cause", "stale planner statistics", DATABASE),
        ("root_cause", "environment issue disk full", DOCKER),
    ],
)
async def test_search_finds_the_right_entry_first(
    stored: JobRun, axis: str, query: str, expected: GhapEntry
) -> None:
    results = await search(stored, query, axis=axis)
    assert results[0].ghap_id == expected.id
    assert results[0].id == point_id(expected.id, axis)


async def test_search_hit_carries_the_experience(stored: JobRun) -> None:
    [hit, *_] = await search(stored, "stale planner statistics", axis="root_cause")
    assert hit.domain == "performance"
    assert hit.strategy == "root-cause-analysis"
    assert hit.goal == DATABASE.goal
    assert hit.outcome_status == "confirmed"
    assert hit.outcome_result == "Query time dropped to 12 ms"
    assert hit.root_cause == RootCause(
        category="missing-knowledge", description="Stale planner statistics after bulk load"
    )
    assert hit.lesson == Lesson(what_worked="Refreshing planner statistics")
    assert hit.confidence_tier == "gold"
    assert hit.created_at == DATABASE.created_at


async def test_surprise_and_root_cause_axes_hold_only_entries_that_have_them(stored: JobRun) -> None:
    for axis in ("surprise", "root_cause"):
        found = {hit.ghap_id for hit in await search(stored, "flaky login test", axis=axis, limit=50)}
        assert found == {DATABASE.id, DOCKER.id}


async def test_scores_are_in_range_and_sorted(stored: JobRun) -> None:
    for axis in AXES:
        results = await search(stored, "database docker login test fixture", axis=axis, limit=50)
        scores = [hit.score for hit in results]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= score <= 1.0 for score in scores)
        assert len({hit.ghap_id for hit in results}) == len(results)  # one point per experience


async def test_domain_filter(stored: JobRun) -> None:
    results = await search(stored, "docker build CI runner", domain="performance", limit=50)
    assert [hit.ghap_id for hit in results] == [DATABASE.id]
    assert await search(stored, "anything", domain="security") == []


async def test_outcome_filter(stored: JobRun) -> None:
    results = await search(stored, "slow database query", outcome="falsified", limit=50)
    assert [hit.ghap_id for hit in results] == [DOCKER.id]
    confirmed = await search(stored, "slow database query", outcome="confirmed", limit=50)
    assert {hit.ghap_id for hit in confirmed} == {DATABASE.id, LOGIN.id}
    both = await search(stored, "query", domain="testing", outcome="confirmed", limit=50)
    assert [hit.ghap_id for hit in both] == [LOGIN.id]


async def test_limit_is_respected(stored: JobRun) -> None:
    for entry_number in range(5):
        await persist(stored, make_entry(goal=f"Extra goal number {entry_number}", minutes=10 + entry_number))
    assert len(await search(stored, "goal", limit=2)) == 2
    assert len(await search(stored, "goal", limit=50)) == 8


async def test_empty_collection_is_no_results_and_is_not_created(run: JobRun) -> None:
    for axis in AXES:
        assert await search(run, "anything", axis=axis) == []
    store = await run.services.vectors()
    assert not any([await store.collection_exists(collection_for(axis)) for axis in AXES])
    # Answered without the model: the embedder was never loaded.
    assert run.services._embedder.ready is None


async def test_axis_without_points_yet_is_no_results(run: JobRun) -> None:
    await persist(run, LOGIN)  # full and strategy only
    assert await search(run, "anything", axis="surprise") == []
    assert [hit.ghap_id for hit in await search(run, "login", axis="full")] == [LOGIN.id]


async def test_search_through_the_registry(stored: JobRun) -> None:
    envelope = await execute(
        SEARCH_EXPERIENCES, {"query": "docker", "axis": "surprise", "outcome": "falsified"}, stored
    )
    [hit] = envelope["ok"]["results"]
    assert hit["ghap_id"] == DOCKER.id
    assert (await execute(SEARCH_EXPERIENCES, {"query": "x", "limit": 0}, stored))["error"]["type"] == (
        "validation_error"
    )
