"""Pure transformations of journal entries (no I/O): an update's iteration, a resolution."""

from __future__ import annotations

from datetime import datetime

from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    Iteration,
    Lesson,
    OutcomeStatus,
    Resolution,
    RootCause,
    Strategy,
    confidence_tier,
)


def with_iteration(
    entry: GhapEntry,
    *,
    at: datetime,
    note: str | None,
    hypothesis: str | None,
    action: str | None,
    prediction: str | None,
    strategy: Strategy | None,
) -> GhapEntry:
    """Keep what the update replaces as an Iteration (history is never lost), then apply the
    fields that were given."""
    iteration = Iteration(
        hypothesis=entry.hypothesis,
        action=entry.action,
        prediction=entry.prediction,
        strategy=entry.strategy,
        note=note,
        updated_at=at,
    )
    changes: dict[str, object] = {"iterations": [*entry.iterations, iteration], "updated_at": at}
    fields = {"hypothesis": hypothesis, "action": action, "prediction": prediction, "strategy": strategy}
    changes.update({name: value for name, value in fields.items() if value is not None})
    return entry.model_copy(update=changes)


def with_resolution(
    entry: GhapEntry,
    *,
    session_id: str,
    status: OutcomeStatus,
    result: str,
    at: datetime,
    surprise: str | None = None,
    root_cause: RootCause | None = None,
    lesson: Lesson | None = None,
) -> GhapEntry:
    """Resolved by ``session_id``: an entry another session started counts as orphaned."""
    orphaned = entry.session_id != session_id
    resolution = Resolution(
        status=status,
        result=result,
        surprise=surprise,
        root_cause=root_cause,
        lesson=lesson,
        confidence_tier=confidence_tier(status, lesson, orphaned),
        resolved_at=at,
        resolved_in_session=session_id,
    )
    return entry.model_copy(update={"resolution": resolution, "updated_at": at})
