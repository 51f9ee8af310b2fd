"""The GHAP tools' answers: an entry's story (its goal, hypothesis, action and prediction) as the
tools show it, picked from the journal's ``GhapEntry`` and its ``Resolution``."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from learning_memory.server.tool_answers import Answer, IsoformatTimes, omitted
from learning_memory.shared.contracts.context import PremortemWarning
from learning_memory.shared.contracts.experiences import (
    ConfidenceTier,
    GhapEntry,
    OutcomeStatus,
    Resolution,
)

CARD = ("id", "domain", "strategy", "goal", "hypothesis", "action", "prediction")


class GhapCard(IsoformatTimes, of=GhapEntry, fields=(*CARD, "created_at")):
    """An entry as the GHAP tools show it: its story, not its history."""


class StartedGhap(GhapCard):
    warnings: list[PremortemWarning]
    warning: str | None = omitted("Set when an active entry was archived as abandoned to start this one.")


class UpdatedGhap(BaseModel):
    success: Literal[True] = True
    iteration_count: int


class _ResolvedEntry(IsoformatTimes, of=GhapEntry, fields=("id",)):
    pass


class ResolvedGhap(_ResolvedEntry, of=Resolution, fields=("status", "confidence_tier", "resolved_at")):
    stored: bool = Field(description="Whether it is stored for search_experiences yet.")
    note: str | None = omitted()


class ActiveGhap(GhapCard):
    iteration_count: int
    has_active: Literal[True] = True


class NoActiveGhap(Answer, of=GhapEntry, fields=CARD, null=True):
    """get_active_ghap when no entry is active: the same keys, null."""

    iteration_count: None = None
    created_at: None = None
    has_active: Literal[False] = False


class _SummaryHead(IsoformatTimes, of=GhapEntry, fields=("id", "domain", "strategy", "goal")):
    outcome_status: OutcomeStatus | None
    confidence_tier: ConfidenceTier | None
    iteration_count: int


class GhapSummary(_SummaryHead, of=GhapEntry, fields=("created_at",)):
    resolved_at: datetime | None
