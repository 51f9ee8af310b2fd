"""The overview of what is stored, per project, and of the latest sessions: what they did and what
the hooks showed the agent in them, with whether it helped."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.browse import (
    Injection,
    InjectionOutcome,
    OverviewRequest,
    OverviewResponse,
    ProjectCounts,
    SessionSummary,
)
from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.contracts.code import ListProjectsRequest
from learning_memory.worker.browse.memo import kept
from learning_memory.worker.browse.records import (
    COLLECTIONS,
    all_records,
    items_by_id,
    project_filter,
    split_item,
)
from learning_memory.worker.browse.shown import (
    Shown,
    log_project,
    outcomes,
    read_events,
    session_logs,
    shown_in_logs,
    shown_with_outcome,
)
from learning_memory.worker.jobs.code import list_indexed_projects
from learning_memory.worker.recall.search import set_aside
from learning_memory.worker.services import JobRun

PROMPT_CHARS = 160
COUNT_FIELDS = ("project", "source", "stale", "retired", "wrong")


async def project_counts(run: JobRun, project: str | None) -> list[ProjectCounts]:
    """Per project (one, or every project found), its records by kind; most experiences first."""
    store = await run.services.vectors()
    counts: dict[str | None, Counter[str]] = {}
    if project is not None:
        counts[project] = Counter()
    for kind, collection in COLLECTIONS.items():
        for record in await all_records(store, collection, project_filter(project), COUNT_FIELDS):
            data = record.payload
            tally = counts.setdefault(data.get("project"), Counter())
            tally[kind] += 1
            if kind == "experience":
                tally[f"experience_{data.get('source') or 'agent'}"] += 1
            if data.get("stale") in ("changed", "gone"):
                tally["stale"] += 1
            if set_aside(data):
                tally["set_aside"] += 1
    found = [
        ProjectCounts(
            project=name,
            memories=tally["memory"],
            experiences=tally["experience"],
            experiences_agent=tally["experience_agent"],
            experiences_auto=tally["experience_auto"],
            values=tally["value"],
            stale=tally["stale"],
            set_aside=tally["set_aside"],
        )
        for name, tally in counts.items()
    ]
    found.sort(key=lambda c: (-c.experiences, -c.memories, c.project is None, c.project or ""))
    return found


def summary(events: Sequence[SessionEvent]) -> SessionSummary:
    kinds = Counter(event.type for event in events)
    prompts = [event.prompt for event in events if event.type == "prompt" and event.prompt]
    branches = [event.branch for event in events if event.branch]
    return SessionSummary(
        session_id=events[0].session_id,
        project=events[0].project,
        worktree=events[0].worktree or None,
        branch=branches[-1] if branches else None,
        started_at=min(event.at for event in events),
        last_event_at=max(event.at for event in events),
        events=len(events),
        prompts=kinds["prompt"],
        runs=kinds["run"],
        failed_runs=sum(1 for e in events if e.type == "run" and e.run is not None and not e.run.passed),
        edits=kinds["edit"],
        injected=sum(len(event.items) for event in events if event.type == "injected"),
        first_prompt=one_line(prompts[0], PROMPT_CHARS) if prompts else None,
    )


def latest_sessions(data_dir: Path, project: str | None, limit: int) -> list[SessionSummary]:
    """The last-written session logs (of ``project``), latest first."""
    found: list[SessionSummary] = []
    for path in session_logs(data_dir):
        if len(found) >= limit:
            break
        if project is not None and log_project(path) != project:
            continue
        events = read_events(path)
        if events:
            found.append(summary(events))
    return found


def latest_shown(data_dir: Path, project: str | None, limit: int) -> list[Shown]:
    """The items shown last (each once per session, at its latest showing), with the outcome of
    the episode that followed: from the kept logs, then from the feedback of pruned ones."""
    decided = outcomes(data_dir, project)
    chosen: dict[tuple[str, str], Shown] = {}
    for shown in shown_in_logs(data_dir, project):  # newest first
        key = (shown.item, shown.session_id)
        if key not in chosen:
            chosen[key] = replace(shown, helped=decided.get(key))
    for shown in shown_with_outcome(data_dir, project, limit):
        chosen.setdefault((shown.item, shown.session_id), shown)
    return sorted(chosen.values(), key=lambda s: s.at, reverse=True)[:limit]


def _outcome(helped: bool | None) -> InjectionOutcome:
    return "undecided" if helped is None else "helped" if helped else "not_helped"


async def injections(run: JobRun, project: str | None, limit: int) -> list[Injection]:
    if limit == 0:
        return []
    shown = await asyncio.to_thread(latest_shown, run.services.settings.data_dir, project, limit)
    texts = await items_by_id(await run.services.vectors(), [s.item for s in shown])
    found = []
    for entry in shown:
        parsed = split_item(entry.item)
        if parsed is None:
            continue
        record = texts.get(entry.item)
        found.append(
            Injection(
                item=entry.item,
                kind=parsed[0],
                id=parsed[1],
                text=record.text if record is not None else None,
                via=entry.via,
                shown_at=entry.at,
                session_id=entry.session_id,
                project=entry.project,
                outcome=_outcome(entry.helped),
            )
        )
    return found


async def overview(run: JobRun, request: OverviewRequest) -> OverviewResponse:
    data_dir = run.services.settings.data_dir
    # Code indexes are named by whoever indexed them, not by the repository's identity that
    # capture uses: all of them are listed, whatever the project asked.
    indexed = (await list_indexed_projects(run, ListProjectsRequest())).projects
    return OverviewResponse(
        projects=await kept(
            run, "project_counts", request.project, lambda: project_counts(run, request.project)
        ),
        indexed=indexed,
        sessions=await asyncio.to_thread(latest_sessions, data_dir, request.project, request.sessions),
        injections=await injections(run, request.project, request.injections),
    )
