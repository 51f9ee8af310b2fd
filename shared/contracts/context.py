"""What the agent is shown of its past: context assembled for a query, premortem warnings, and
the full records behind the ids a one-line summary carries.

An item's id names its kind and its record: ``exp:<ghap_id>``, ``val:<value_id>`` or
``mem:<memory_id>``; ``expand_context`` takes these ids back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from learning_memory.shared.contracts.experiences import Domain, Lesson, OutcomeStatus, RootCause
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

ContextKind = Literal["experience", "value", "memory"]
KIND_PREFIXES: dict[str, ContextKind] = {"exp": "experience", "val": "value", "mem": "memory"}
MAX_EXPAND_IDS = 20


def item_id(kind: ContextKind, record_id: str) -> str:
    prefix = next(p for p, k in KIND_PREFIXES.items() if k == kind)
    return f"{prefix}:{record_id}"


class AssembleContextRequest(Contract):
    query: str = Field(min_length=1)
    budget_tokens: int = Field(ge=1, le=8_000)
    # Cosine similarity the best item needs for anything to be put forward (worker.jobs.context).
    min_score: float = Field(ge=0.0, le=1.0)
    max_items: int = Field(default=8, ge=1, le=50)


class ContextItem(Contract):
    id: str
    kind: ContextKind
    score: float = Field(ge=0.0, le=1.0)
    text: str  # one line, without the id
    tokens: int  # of the rendered line, id included
    # Episodes after it was shown that went green, or did not (``shared.fix_feedback``).
    helped: int = 0
    not_helped: int = 0


class AssembleContextResponse(Contract):
    items: list[ContextItem]  # best first, within the budget
    tokens: int
    # How many cleared the bar (after deduplication) before the budget and max_items cut.
    candidates: int


class PremortemRequest(Contract):
    goal: str = Field(min_length=1)
    hypothesis: str | None = None
    domain: Domain | None = None
    limit: int = Field(default=3, ge=1, le=20)
    min_score: float = Field(ge=0.0, le=1.0)


class PremortemWarning(Contract):
    ghap_id: str
    domain: Domain
    goal: str
    hypothesis: str
    outcome_status: OutcomeStatus
    result: str
    surprise: str | None = None
    root_cause: RootCause | None = None
    lesson: Lesson | None = None
    score: float = Field(ge=0.0, le=1.0)
    created_at: datetime
    helped: int = 0
    not_helped: int = 0


class PremortemResponse(Contract):
    warnings: list[PremortemWarning]  # most similar first


class ExpandContextRequest(Contract):
    ids: list[str] = Field(min_length=1, max_length=MAX_EXPAND_IDS)


class ExpandedItem(Contract):
    id: str
    kind: ContextKind
    record: dict[str, Any]


class ExpandContextResponse(Contract):
    items: list[ExpandedItem]
    missing: list[str]


ASSEMBLE_CONTEXT: JobSpec[AssembleContextRequest, AssembleContextResponse] = JobSpec(
    "assemble_context", AssembleContextRequest, AssembleContextResponse, Queue.INTERACTIVE, timeout_s=120
)
PREMORTEM: JobSpec[PremortemRequest, PremortemResponse] = JobSpec(
    "premortem_warnings", PremortemRequest, PremortemResponse, Queue.INTERACTIVE, timeout_s=120
)
EXPAND_CONTEXT: JobSpec[ExpandContextRequest, ExpandContextResponse] = JobSpec(
    "expand_context", ExpandContextRequest, ExpandContextResponse, Queue.INTERACTIVE, timeout_s=60
)
