"""GHAP entries and experiences: the journal's records, and the persist and search jobs.

A GHAP entry (goal, hypothesis, action, prediction) lives in the server's journal while it is
active; resolving it makes an *experience*, embedded on four axes and stored for search.
Domain is not an axis: it is a filter on every axis.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

Domain = Literal[
    "debugging",
    "refactoring",
    "feature",
    "testing",
    "configuration",
    "documentation",
    "performance",
    "security",
    "integration",
]
Strategy = Literal[
    "systematic-elimination",
    "trial-and-error",
    "research-first",
    "divide-and-conquer",
    "root-cause-analysis",
    "copy-from-similar",
    "check-assumptions",
    "read-the-error",
    "ask-user",
]
RootCauseCategory = Literal[
    "wrong-assumption",
    "missing-knowledge",
    "oversight",
    "environment-issue",
    "misleading-symptom",
    "incomplete-fix",
    "wrong-scope",
    "test-isolation",
    "timing-issue",
]
OutcomeStatus = Literal["confirmed", "falsified", "abandoned"]
# "auto": mined from a session's runs and edits without the agent's words (learning_memory.worker.capture);
# it ranks below what an agent wrote and resolved, above what was abandoned.
ConfidenceTier = Literal["gold", "silver", "bronze", "auto", "abandoned"]
# Who wrote an entry: the agent through the GHAP tools, or the session miner from what the hooks saw.
Source = Literal["agent", "auto"]
Axis = Literal["full", "strategy", "surprise", "root_cause"]
# What became of the code an experience is anchored to since (see worker.capture.staleness):
# rewritten ("changed": shown with a warning) or deleted ("gone": kept and searchable, never injected).
Stale = Literal["changed", "gone"]

DOMAINS: tuple[str, ...] = get_args(Domain)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
ROOT_CAUSE_CATEGORIES: tuple[str, ...] = get_args(RootCauseCategory)
OUTCOME_STATUSES: tuple[str, ...] = get_args(OutcomeStatus)
AXES: tuple[str, ...] = get_args(Axis)
SOURCES: tuple[str, ...] = get_args(Source)
# Clustering weights of the tiers: a member's pull on its cluster's centroid.
TIER_WEIGHTS: dict[str, float] = {"gold": 1.0, "silver": 0.8, "bronze": 0.5, "auto": 0.4, "abandoned": 0.2}
MAX_GHAP_FIELD_CHARS = 1_000  # goal, hypothesis, action, prediction, note
MAX_RESOLUTION_FIELD_CHARS = 2_000  # result, surprise, root cause, lesson
# Fixed, so that an experience's point ids are the same in every process and on every retry.
EXPERIENCE_ID_NAMESPACE = uuid.UUID("6b1f3a52-4c36-4f0e-9a7e-3f1f0c2d5e11")


def collection_for(axis: str) -> str:
    return f"experiences_{axis}"


def point_id(ghap_id: str, axis: str) -> str:
    """The experience's point id on one axis: deterministic, so a retried persist replaces it."""
    return str(uuid.uuid5(EXPERIENCE_ID_NAMESPACE, f"{ghap_id}:{axis}"))


class Iteration(Contract):
    """What an update_ghap replaced, kept so the entry's history is never lost."""

    hypothesis: str
    action: str
    prediction: str
    strategy: Strategy
    note: str | None = None
    updated_at: datetime


EvidenceKind = Literal["test", "build"]
# An entry keeps its most recent runs: enough to tell a trend, never a growing file.
MAX_EVIDENCE = 20


class Evidence(Contract):
    """A test or build run seen while the entry was active (recorded by the Claude Code hook)."""

    kind: EvidenceKind
    command: str
    passed: bool  # exit status 0 and no failure counted
    exit_code: int | None = None
    tests_passed: int | None = None
    tests_failed: int | None = None
    summary: str  # one line, e.g. "5 passed, 1 failed"
    at: datetime


class RootCause(Contract):
    category: RootCauseCategory
    description: str


class Lesson(Contract):
    what_worked: str
    takeaway: str | None = None


class Resolution(Contract):
    status: OutcomeStatus
    result: str
    surprise: str | None = None
    root_cause: RootCause | None = None
    lesson: Lesson | None = None
    confidence_tier: ConfidenceTier
    resolved_at: datetime
    resolved_in_session: str


class Anchor(Contract):
    """Where an experience happened in the code: a file (relative to the repository's root), and
    the function or class in it and the commit, when known."""

    file: str
    symbol: str | None = None  # qualified name, e.g. "Session.refresh"
    commit: str | None = None
    # A short hash of the symbol's source (whitespace collapsed) when it was captured: a later
    # look at the file tells whether the code was rewritten since.
    digest: str | None = None


class GhapEntry(Contract):
    """A journal entry: active while ``resolution`` is None."""

    id: str
    session_id: str  # the server session that started it
    domain: Domain
    strategy: Strategy
    goal: str
    hypothesis: str
    action: str
    prediction: str
    created_at: datetime
    updated_at: datetime
    iterations: list[Iteration] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)  # oldest first
    resolution: Resolution | None = None
    source: Source = "agent"
    anchors: list[Anchor] = Field(default_factory=list)
    # How many episodes taught it (an auto experience met again is strengthened, not repeated).
    occurrences: int = Field(default=1, ge=1)
    last_seen: datetime | None = None  # the latest of those episodes, when there were several
    project: str | None = None  # the repository's identity, the same in every clone and worktree

    @property
    def iteration_count(self) -> int:
        return len(self.iterations) + 1


def confidence_tier(status: str, lesson: Lesson | None, orphaned: bool) -> ConfidenceTier:
    """Abandoned; bronze if resolved after being orphaned; gold with a lesson; else silver."""
    if status == "abandoned":
        return "abandoned"
    if orphaned:
        return "bronze"
    return "gold" if lesson is not None and lesson.what_worked.strip() else "silver"


# --- jobs --------------------------------------------------------------------------


class PersistExperienceRequest(Contract):
    entry: GhapEntry  # resolved


class PersistExperienceResponse(Contract):
    ghap_id: str
    axes: list[Axis]  # the axes it was stored on (surprise and root_cause only when present)


class SearchExperiencesRequest(Contract):
    query: str = Field(min_length=1)
    axis: Axis = "full"
    domain: Domain | None = None
    outcome: OutcomeStatus | None = None
    limit: int = Field(default=10, ge=1, le=50)


class ExperienceHit(Contract):
    id: str  # the point id
    ghap_id: str
    domain: Domain
    strategy: Strategy
    goal: str
    hypothesis: str
    action: str
    prediction: str
    outcome_status: OutcomeStatus
    outcome_result: str
    surprise: str | None = None
    root_cause: RootCause | None = None
    lesson: Lesson | None = None
    confidence_tier: ConfidenceTier
    evidence: list[Evidence] = Field(default_factory=list)
    score: float = Field(ge=0.0, le=1.0)
    created_at: datetime
    # With defaults: points stored before these fields existed still read.
    source: Source = "agent"
    anchors: list[Anchor] = Field(default_factory=list)
    occurrences: int = 1
    last_seen: datetime | None = None
    project: str | None = None
    # Episodes that followed the agent being shown this experience and went green, or did not
    # (``shared.fix_feedback``).
    helped: int = 0
    not_helped: int = 0
    stale: Stale | None = None  # its anchored code changed or went since it was captured
    # Marked wrong by a person (shared.contracts.curation): kept, never recalled; told only when true.
    wrong: bool = Field(default=False, exclude_if=lambda value: not value)


class SearchExperiencesResponse(Contract):
    results: list[ExperienceHit]


PERSIST_EXPERIENCE: JobSpec[PersistExperienceRequest, PersistExperienceResponse] = JobSpec(
    "persist_experience",
    PersistExperienceRequest,
    PersistExperienceResponse,
    Queue.INTERACTIVE,
    timeout_s=120,
)
SEARCH_EXPERIENCES: JobSpec[SearchExperiencesRequest, SearchExperiencesResponse] = JobSpec(
    "search_experiences",
    SearchExperiencesRequest,
    SearchExperiencesResponse,
    Queue.INTERACTIVE,
    timeout_s=120,
)
