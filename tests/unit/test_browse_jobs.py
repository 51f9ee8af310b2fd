"""browse_experiences and overview, called directly and through the registry (inline settings,
hashing embedder, the real embedded vector store, a real fix index and session logs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.shared.contracts.browse import (
    BROWSE_EXPERIENCES,
    OVERVIEW,
    BrowseExperiencesRequest,
    OverviewRequest,
)
from learning_memory.shared.contracts.capture import RunOutcome
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import GhapEntry
from learning_memory.worker.browse.experiences import experience_filter
from learning_memory.worker.jobs.browse import browse_experiences, overview
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import MatchValue, Range
from tests.browse_data import NOW, persist, record_feedback, remember, write_log
from tests.helpers import job_run
from tests.learning_data import T0

SAMPLES = generated_entries(40, seed=11)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:384") as run:
        yield run


@pytest.fixture
async def stored(run: JobRun) -> list[GhapEntry]:
    return await persist(run, SAMPLES, range(len(SAMPLES)))


def test_filters_are_the_stores_conditions() -> None:
    request = BrowseExperiencesRequest(
        project="repo-a", outcome="confirmed", domain="testing", source="auto", created_from=T0
    )
    assert experience_filter(request).must == (
        MatchValue("project", "repo-a"),
        MatchValue("outcome_status", "confirmed"),
        MatchValue("domain", "testing"),
        MatchValue("source", "auto"),
        Range("created_ts", gte=T0.timestamp()),
    )
    assert experience_filter(BrowseExperiencesRequest()).must == ()


async def test_nothing_stored_lists_and_searches_nothing(run: JobRun) -> None:
    listed = await browse_experiences(run, BrowseExperiencesRequest())
    searched = await browse_experiences(run, BrowseExperiencesRequest(query="login", axis="surprise"))
    assert (listed.total, listed.results, listed.searched) == (0, [], False)
    assert (searched.total, searched.results, searched.searched) == (0, [], True)


async def test_pages_newest_first_under_each_filter(run: JobRun, stored: list[GhapEntry]) -> None:
    first = await browse_experiences(run, BrowseExperiencesRequest(limit=15))
    second = await browse_experiences(run, BrowseExperiencesRequest(limit=15, offset=15))
    assert first.total == second.total == len(stored) and not first.searched
    listed = first.results + second.results
    assert [hit.created_at for hit in listed] == sorted((e.created_at for e in stored), reverse=True)[:30]
    assert len({hit.ghap_id for hit in listed}) == 30
    assert all(hit.score == 0.0 for hit in listed)
    # What a hit carries: the whole experience, its source and project.
    newest = max(stored, key=lambda e: e.created_at)
    assert (listed[0].ghap_id, listed[0].goal, listed[0].project) == (newest.id, newest.goal, newest.project)

    def expected(**where: object) -> set[str]:
        return {e.id for e in stored if all(getattr(e, k) == v for k, v in where.items())}

    for request, want in [
        (BrowseExperiencesRequest(project="repo-b"), expected(project="repo-b")),
        (BrowseExperiencesRequest(source="auto"), expected(source="auto")),
        (BrowseExperiencesRequest(domain="testing"), expected(domain="testing")),
        (
            BrowseExperiencesRequest(project="repo-a", source="agent"),
            expected(project="repo-a", source="agent"),
        ),
    ]:
        found = await browse_experiences(run, request.model_copy(update={"limit": 200}))
        assert {hit.ghap_id for hit in found.results} == want and found.total == len(want)
    falsified = {e.id for e in stored if e.resolution and e.resolution.status == "falsified"}
    found = await browse_experiences(run, BrowseExperiencesRequest(outcome="falsified", limit=200))
    assert {hit.ghap_id for hit in found.results} == falsified
    # A date range: inclusive from, exclusive to.
    window = BrowseExperiencesRequest(
        created_from=T0 + timedelta(minutes=10), created_to=T0 + timedelta(minutes=20), limit=200
    )
    found = await browse_experiences(run, window)
    assert sorted(hit.ghap_id for hit in found.results) == sorted(
        e.id for e in stored if T0 + timedelta(minutes=10) <= e.created_at < T0 + timedelta(minutes=20)
    )
    assert found.total == 10


async def test_a_query_searches_one_axis_under_the_filters(run: JobRun, stored: list[GhapEntry]) -> None:
    target = stored[7]
    request = BrowseExperiencesRequest(query=target.goal, project=target.project, limit=5)
    found = await browse_experiences(run, request)
    assert found.searched and found.results[0].ghap_id == target.id
    assert all(hit.project == target.project for hit in found.results)
    scores = [hit.score for hit in found.results]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    # Pages of one ranking never overlap, and add up to the total.
    pages = [
        await browse_experiences(run, request.model_copy(update={"offset": offset, "limit": 5}))
        for offset in range(0, found.total, 5)
    ]
    ids = [hit.ghap_id for page in pages for hit in page.results]
    assert len(ids) == len(set(ids)) == found.total
    on_strategy = await browse_experiences(
        run, BrowseExperiencesRequest(query=target.action, axis="strategy")
    )
    assert on_strategy.searched and all(hit.id != hit.ghap_id for hit in on_strategy.results)


async def test_bad_requests_are_validation_errors(run: JobRun) -> None:
    envelope = await execute(
        BROWSE_EXPERIENCES, {"created_from": NOW.isoformat(), "created_to": NOW.isoformat()}, run
    )
    assert (
        envelope["error"]["type"] == "validation_error" and "must be before" in envelope["error"]["message"]
    )
    envelope = await execute(BROWSE_EXPERIENCES, {"outcome": "maybe"}, run)
    assert envelope["error"]["type"] == "validation_error"


async def test_overview_counts_sessions_and_what_was_shown(run: JobRun, stored: list[GhapEntry]) -> None:
    data_dir = run.services.settings.data_dir
    memories = await remember(run, "The deploy script reads AWS_PROFILE", "Use uv, not pip")
    await remember(run, "A memory of no repository", project=None)
    shown_exp, shown_mem = item_id("experience", stored[0].id), item_id("memory", memories[0].id)
    failing = RunOutcome(kind="test", runner="pytest", exit_code=1, passed=False, tests_failed=1)
    write_log(
        data_dir,
        "repo-a",
        "s-old",
        [
            {"type": "prompt", "prompt": "Fix the login test"},
            {"type": "run", "command": "pytest", "run": failing},
        ],
    )
    write_log(
        data_dir,
        "repo-a",
        "s-new",
        [
            {"type": "injected", "items": [shown_exp, shown_mem], "via": "prompt"},
            {"type": "prompt", "prompt": "Speed up   the\nimport"},
            {"type": "edit", "file": "src/app.py", "branch": "main"},
        ],
    )
    write_log(data_dir, "repo-b", "s-other", [{"type": "prompt", "prompt": "Elsewhere"}])
    # A session mined and pruned since: only its feedback is left.
    record_feedback(data_dir, "repo-a", "s-gone", {item_id("value", "no-such-value"): False, shown_exp: True})
    record_feedback(data_dir, "repo-a", "s-new", {shown_mem: True})

    found = await overview(run, OverviewRequest())
    by_project = {counts.project: counts for counts in found.projects}
    assert set(by_project) == {"repo-a", "repo-b", None}
    a = by_project["repo-a"]
    assert (a.experiences, a.memories, a.values, a.stale) == (20, 2, 0, 0)
    assert a.experiences_auto == sum(1 for e in stored if e.project == "repo-a" and e.source == "auto")
    assert a.experiences_agent + a.experiences_auto == a.experiences
    assert by_project[None].memories == 1 and found.indexed == []
    assert {s.session_id for s in found.sessions} == {"s-old", "s-new", "s-other"}

    only_a = await overview(run, OverviewRequest(project="repo-a", sessions=1))
    assert [c.project for c in only_a.projects] == ["repo-a"]
    [latest] = only_a.sessions
    assert latest.session_id in {"s-new", "s-old"} and latest.project == "repo-a"
    sessions = {s.session_id: s for s in (await overview(run, OverviewRequest(project="repo-a"))).sessions}
    new = sessions["s-new"]
    assert (new.events, new.prompts, new.edits, new.injected, new.branch) == (3, 1, 1, 2, "main")
    assert new.first_prompt == "Speed up the import"
    assert (sessions["s-old"].runs, sessions["s-old"].failed_runs) == (1, 1)

    shown = {(i.item, i.session_id): i for i in only_a.injections}
    assert shown[(shown_mem, "s-new")].outcome == "helped"
    assert shown[(shown_mem, "s-new")].text == "The deploy script reads AWS_PROFILE"
    assert shown[(shown_exp, "s-new")].outcome == "undecided"
    assert (
        shown[(shown_exp, "s-new")].text == stored[0].goal
        and shown[(shown_exp, "s-new")].kind == "experience"
    )
    assert shown[(shown_exp, "s-gone")].outcome == "helped"
    gone = shown[(item_id("value", "no-such-value"), "s-gone")]
    assert gone.outcome == "not_helped" and gone.text is None
    assert [i.shown_at for i in only_a.injections] == sorted(
        (i.shown_at for i in only_a.injections), reverse=True
    )
    assert (await overview(run, OverviewRequest(project="repo-b"))).injections == []

    envelope = await execute(OVERVIEW, {"sessions": 0, "injections": 0}, run)
    assert envelope["ok"]["sessions"] == [] and envelope["ok"]["injections"] == []


async def test_overview_of_an_empty_store(run: JobRun) -> None:
    found = await overview(run, OverviewRequest(project="repo-a"))
    assert [(c.project, c.experiences, c.memories) for c in found.projects] == [("repo-a", 0, 0)]
    assert (found.sessions, found.injections) == ([], [])
