"""GHAP tools: start_ghap, update_ghap, resolve_ghap, get_active_ghap, list_ghap_entries.

Unlike the memory tools, these refuse bad input rather than repair it (a hypothesis repaired by
guesswork would teach the wrong lesson): an empty or over-long field, or a falsified outcome
without its surprise and root cause, is a validation error naming the field and the rule. The
journal is local and instant; only resolving awaits the worker, to store the experience for
search.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from learning_memory.server.background import spawn
from learning_memory.server.services import AppServices, app_services
from learning_memory.server.services.context_assembly import premortem_or_nothing
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.services.persistence import RESOLVE_BUDGET_S, finish_later, persist
from learning_memory.server.tool_answers import Results
from learning_memory.server.tool_registry import tool
from learning_memory.server.tools.ghap_answers import (
    ActiveGhap,
    GhapSummary,
    NoActiveGhap,
    ResolvedGhap,
    StartedGhap,
    UpdatedGhap,
)
from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.contracts.experiences import (
    DOMAINS,
    MAX_GHAP_FIELD_CHARS,
    MAX_RESOLUTION_FIELD_CHARS,
    ROOT_CAUSE_CATEGORIES,
    STRATEGIES,
    Domain,
    GhapEntry,
    Lesson,
    OutcomeStatus,
    RootCause,
    RootCauseCategory,
    Strategy,
)
from learning_memory.shared.errors import LmsError, ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
MAX_LIST = 100


def _text(name: str, value: str | None, limit: int, *, required: bool) -> str | None:
    if value is None:
        if required:
            raise ValidationError(f"{name} is required")
        return None
    value = utf8_safe(value).strip()
    if not value:
        raise ValidationError(f"{name} must not be empty")
    if len(value) > limit:
        raise ValidationError(f"{name} is too long: {len(value):,} characters, the limit is {limit:,}")
    return value


def _required(name: str, value: str, limit: int = MAX_GHAP_FIELD_CHARS) -> str:
    checked = _text(name, value, limit, required=True)
    assert checked is not None
    return checked


def _since(value: str | None) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValidationError(
            f"since must be an ISO 8601 date or time, e.g. 2026-11-01 or 2026-11-01T09:30:00Z (got {value!r})"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _summary(entry: GhapEntry) -> GhapSummary:
    resolution = entry.resolution
    return GhapSummary.pick(
        entry,
        outcome_status=resolution.status if resolution else None,
        confidence_tier=resolution.confidence_tier if resolution else None,
        resolved_at=resolution.resolved_at if resolution else None,
    )


class RootCauseInput(BaseModel):
    category: Annotated[RootCauseCategory, Field(description=f"One of: {', '.join(ROOT_CAUSE_CATEGORIES)}.")]
    description: str


class LessonInput(BaseModel):
    what_worked: Annotated[str, Field(description="The actual fix or the approach that worked.")]
    takeaway: Annotated[str | None, Field(description="The lesson in one line, if any.")] = None


@tool(
    "start_ghap",
    description=(
        "Start tracking a working hypothesis: your goal, what you believe (hypothesis), what you do "
        "about it (action) and what you expect to see if you are right (prediction). The answer's "
        "warnings are past falsified or abandoned attempts at similar goals, with their root causes. "
        f"Domains: {', '.join(DOMAINS)}. Strategies: {', '.join(STRATEGIES)}."
    ),
    instant=True,
)
async def start_ghap(
    ctx: Context[AppServices, Any],
    domain: Domain,
    strategy: Strategy,
    goal: Annotated[str, Field(description="What meaningful change are you trying to make?")],
    hypothesis: Annotated[str, Field(description="What do you believe about the situation?")],
    action: Annotated[str, Field(description="What are you doing based on this belief?")],
    prediction: Annotated[str, Field(description="If your hypothesis is correct, what will you observe?")],
) -> StartedGhap:
    app = app_services(ctx)
    fields = {
        "goal": _required("goal", goal),
        "hypothesis": _required("hypothesis", hypothesis),
        "action": _required("action", action),
        "prediction": _required("prediction", prediction),
    }
    # Looked up while the journal writes: warnings cost start_ghap no more than their own search.
    warnings = asyncio.create_task(
        premortem_or_nothing(app, fields["goal"], fields["hypothesis"]), name="premortem"
    )
    try:
        entry, orphan = await asyncio.to_thread(app.journal.start, domain=domain, strategy=strategy, **fields)
    except BaseException:
        warnings.cancel()
        raise
    if orphan is None:
        return StartedGhap.pick(entry, warnings=await warnings)
    log.warning("ghap.orphaned_entry", orphan=orphan.id, new=entry.id)
    # Archived as abandoned, it is stored too (tier "abandoned"), without holding the tool.
    spawn(finish_later(app.journal, app.jobs, orphan), name=f"persist-{orphan.id}")
    warning = f"GHAP entry {orphan.id} was still active; it was archived as abandoned (nothing is lost)."
    return StartedGhap.pick(entry, warnings=await warnings, warning=warning)


@tool(
    "update_ghap",
    description=(
        "Revise the active GHAP entry as you learn: a new hypothesis, action, prediction or strategy, "
        "and a note on why. The previous version is kept in the entry's history."
    ),
    instant=True,
)
async def update_ghap(
    ctx: Context[AppServices, Any],
    hypothesis: str | None = None,
    action: str | None = None,
    prediction: str | None = None,
    strategy: Strategy | None = None,
    note: Annotated[str | None, Field(description="Why it changed (kept in the history).")] = None,
) -> UpdatedGhap:
    changes = {
        name: _text(name, value, MAX_GHAP_FIELD_CHARS, required=False)
        for name, value in (("hypothesis", hypothesis), ("action", action), ("prediction", prediction))
    }
    checked_note = _text("note", note, MAX_GHAP_FIELD_CHARS, required=False)
    if all(value is None for value in changes.values()) and strategy is None and checked_note is None:
        raise ValidationError("Nothing to update: give hypothesis, action, prediction, strategy or note.")
    journal = app_services(ctx).journal
    entry = await asyncio.to_thread(journal.update, strategy=strategy, note=checked_note, **changes)
    return UpdatedGhap(iteration_count=entry.iteration_count)


@tool(
    "resolve_ghap",
    description=(
        "Close the active GHAP entry with what happened: confirmed, falsified (then give the surprise "
        "and the root cause) or abandoned. A lesson (what worked) makes the experience gold-tier. "
        "The experience is then stored for search_experiences (stored: false when that is still "
        "under way as the tool answers; it finishes by itself)."
    ),
    instant=True,
)
async def resolve_ghap(
    ctx: Context[AppServices, Any],
    status: OutcomeStatus,
    result: Annotated[str, Field(description="What actually happened?")],
    surprise: Annotated[str | None, Field(description="What was unexpected? Required if falsified.")] = None,
    root_cause: Annotated[
        RootCauseInput | None, Field(description="Why the hypothesis was wrong. Required if falsified.")
    ] = None,
    lesson: Annotated[LessonInput | None, Field(description="What worked, recommended.")] = None,
) -> ResolvedGhap:
    limit = MAX_RESOLUTION_FIELD_CHARS
    checked_result = _required("result", result, limit)
    checked_surprise = _text("surprise", surprise, limit, required=False)
    cause = None
    if root_cause is not None:
        description = _required("root_cause.description", root_cause.description, limit)
        cause = RootCause(category=root_cause.category, description=description)
    learned = None
    if lesson is not None:
        takeaway = _text("lesson.takeaway", lesson.takeaway, limit, required=False)
        learned = Lesson(
            what_worked=_required("lesson.what_worked", lesson.what_worked, limit), takeaway=takeaway
        )
    if status == "falsified" and (checked_surprise is None or cause is None):
        raise ValidationError("A falsified hypothesis needs both surprise and root_cause.")
    app = app_services(ctx)
    entry = await asyncio.to_thread(
        app.journal.resolve,
        status=status,
        result=checked_result,
        surprise=checked_surprise,
        root_cause=cause,
        lesson=learned,
    )
    resolution = entry.resolution
    assert resolution is not None
    try:
        await persist(app.jobs, entry, budget_s=RESOLVE_BUDGET_S)
    except JobStillRunning as still:
        # Saved, and its job is queued or running (a worker starting, say): answer now.
        spawn(finish_later(app.journal, app.jobs, entry, still.job_id), name=f"persist-{entry.id}")
        note = (
            f"The resolution is saved in the journal; storing it for search_experiences waits for the "
            f"worker (job {still.job_id}) and finishes by itself. Do not resolve it again."
        )
        return ResolvedGhap.pick(entry, resolution, stored=False, note=note)
    except LmsError as exc:
        raise type(exc)(
            f"The resolution of {entry.id} is saved in the journal (tier {resolution.confidence_tier}), "
            f"but storing it for search failed: {exc.message} "
            "It will be stored automatically once the worker is back; do not resolve it again."
        ) from exc
    await asyncio.to_thread(app.journal.mark_persisted, entry.id)
    return ResolvedGhap.pick(entry, resolution, stored=True)


@tool("get_active_ghap", description="The active GHAP entry, if any (has_active tells).", instant=True)
async def get_active_ghap(ctx: Context[AppServices, Any]) -> ActiveGhap | NoActiveGhap:
    entry = await asyncio.to_thread(app_services(ctx).journal.active)
    return NoActiveGhap() if entry is None else ActiveGhap.pick(entry)


@tool(
    "list_ghap_entries",
    description="Recent GHAP entries of this project, newest first: the active one and resolved ones.",
    instant=True,
)
async def list_ghap_entries(
    ctx: Context[AppServices, Any],
    limit: Annotated[int, Field(description=f"1 to {MAX_LIST} (default 20).")] = 20,
    domain: Domain | None = None,
    outcome: OutcomeStatus | None = None,
    since: Annotated[str | None, Field(description="Only entries created since (ISO 8601).")] = None,
) -> Results[GhapSummary]:
    if not 1 <= limit <= MAX_LIST:
        raise ValidationError(f"limit must be between 1 and {MAX_LIST} (got {limit})")
    moment = _since(since)
    journal = app_services(ctx).journal
    entries = await asyncio.to_thread(
        journal.entries, limit=limit, domain=domain, outcome=outcome, since=moment
    )
    return Results[GhapSummary].of([_summary(entry) for entry in entries])
