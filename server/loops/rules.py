"""The loop record and its decision rule, as pure functions (no I/O, no clock).

A loop counts an iteration each time it is told to refine. A score is judged in this order:
reaching the threshold completes the loop; a loop that has used its iterations, or that
stagnates (at least 3 scores and the last two improvements both under 5 points), goes to
the user; otherwise it refines.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field

from learning_memory.shared.errors import ValidationError
from learning_memory.shared.loop_settings import LoopType

# in_progress is a status records may hold; the decision rule never produces it, so only a
# record written by another version could hold it, and it still takes scores.
LoopStatus = Literal["initialized", "in_progress", "refine", "completed", "user_input"]
LOOP_STATUSES: tuple[str, ...] = get_args(LoopStatus)
FINISHED: frozenset[str] = frozenset({"completed", "user_input"})
MIN_SCORE, MAX_SCORE = 0, 100
STAGNATION_WINDOW = 3
MIN_IMPROVEMENT = 5


class Loop(BaseModel):
    id: str
    loop_type: LoopType
    status: LoopStatus = "initialized"
    # Fixed when the loop starts: changing FSDD_LOOP_* later does not move a running loop's goal.
    threshold: int = Field(ge=1, le=100)
    max_iterations: int = Field(ge=1, le=20)
    iteration: int = 0
    current_score: int | None = None
    score_history: list[int] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime


def check_score(score: int) -> int:
    if not MIN_SCORE <= score <= MAX_SCORE:
        raise ValidationError(f"current_score must be between {MIN_SCORE} and {MAX_SCORE} (got {score})")
    return score


def is_stagnant(history: list[int]) -> bool:
    if len(history) < STAGNATION_WINDOW:
        return False
    a, b, c = history[-3:]
    return b - a < MIN_IMPROVEMENT and c - b < MIN_IMPROVEMENT


def decide(loop: Loop, score: int, at: datetime) -> Loop:
    """The loop after judging ``score``. A finished loop refuses it (ValidationError)."""
    if loop.status in FINISHED:
        raise ValidationError(
            f"Loop {loop.id} is already {loop.status} and takes no more scores; "
            "call initialize_refinement_loop to start a new one."
        )
    history = [*loop.score_history, check_score(score)]
    iteration = loop.iteration
    status: LoopStatus
    if score >= loop.threshold:
        status = "completed"
    elif iteration >= loop.max_iterations or is_stagnant(history):
        status = "user_input"
    else:
        status = "refine"
        iteration += 1
    return loop.model_copy(
        update={
            "status": status,
            "iteration": iteration,
            "current_score": score,
            "score_history": history,
            "updated_at": at,
        }
    )


def reason(loop: Loop) -> str:
    """Why the loop has its status, in words an agent can pass on."""
    score, threshold = loop.current_score, loop.threshold
    if loop.status == "initialized" or score is None:
        return f"No score yet; the loop completes at {threshold} or more."
    if loop.status == "completed":
        return f"Score {score} reached the threshold {threshold}: the loop is complete."
    if loop.status == "user_input":
        if loop.iteration >= loop.max_iterations:
            return (
                f"Score {score} is below the threshold {threshold} after all {loop.max_iterations} "
                "iterations: ask the user how to proceed."
            )
        a, b, c = loop.score_history[-3:]
        return (
            f"Score {score} is below the threshold {threshold} and the loop stagnates (the last two "
            f"improvements, {b - a:+d} and {c - b:+d}, are both under {MIN_IMPROVEMENT} points): "
            "ask the user how to proceed."
        )
    return (
        f"Score {score} is below the threshold {threshold}: refine "
        f"(iteration {loop.iteration} of {loop.max_iterations})."
    )
