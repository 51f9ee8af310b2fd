"""Refinement-loop tools: initialize_refinement_loop, decide_loop_next_action,
get_loop_status, list_active_loops.

Inline and instant, no job: the decision is arithmetic on a few scores, and the state is one small
file (see ``server/loops/store.py``). Bad input is refused (a guessed score would steer the loop):
an unknown loop type or a score outside 0-100 is a validation error naming the options or the
range.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Self, TypeVar

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from learning_memory.server.loops.rules import Loop, check_score, reason
from learning_memory.server.loops.store import Busy
from learning_memory.server.services import AppServices, app_services
from learning_memory.server.tool_answers import IsoformatTimes
from learning_memory.server.tool_registry import tool
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.loop_settings import LOOP_TYPES, LoopType

T = TypeVar("T")

LoopId = Annotated[
    str, Field(max_length=64, description="The 8-hex-character id initialize_refinement_loop returned.")
]


async def _run(method: Callable[..., T], *args: Any) -> T:
    """On the event loop when the state is free (the work is well under a millisecond, less
    than a hop to a thread); in a thread when another call or process holds it."""
    try:
        return method(*args, wait=False)
    except Busy:
        return await asyncio.to_thread(method, *args)


DECISION = ("id", "status", "iteration", "max_iterations", "current_score", "threshold")


class LoopDecision(IsoformatTimes, of=Loop, fields=DECISION):
    """A loop's state after a decision, and why it is in it."""

    reason: str

    @classmethod
    def of_loop(cls, loop: Loop) -> Self:
        return cls.pick(loop, reason=reason(loop))


class LoopState(LoopDecision, of=Loop, fields=("loop_type", "score_history", "created_at", "updated_at")):
    """get_loop_status's answer."""


class LoopSummary(
    IsoformatTimes, of=Loop, fields=("id", "status", "loop_type", "iteration", "current_score", "created_at")
):
    """A loop as list_active_loops shows it."""


class Loops(BaseModel):
    """list_active_loops' answer: the loops kept, newest first."""

    loops: list[LoopSummary]
    count: int


@tool(
    "initialize_refinement_loop",
    description=(
        "Start a quality-gated refinement loop and get its id. Loop types and default thresholds: "
        "plan 85, spec 85, build_plan 80, build_code 95, at most 5 refinement iterations each "
        "(FSDD_LOOP_* settings). Then send each draft's quality score to decide_loop_next_action."
    ),
    instant=True,
)
async def initialize_refinement_loop(ctx: Context[AppServices, Any], loop_type: str) -> LoopDecision:
    # A plain str, checked here: the refusal then lists the options in our own words.
    wanted = loop_type.strip().lower()
    if wanted not in LOOP_TYPES:
        raise ValidationError(f"loop_type must be one of {', '.join(LOOP_TYPES)} (got {loop_type!r})")
    kind: LoopType = wanted  # type: ignore[assignment]
    loop = await _run(app_services(ctx).loops.create, kind)
    return LoopDecision.of_loop(loop)


@tool(
    "decide_loop_next_action",
    description=(
        "Submit the current quality score (0-100) of a loop's work and get the next action: "
        "completed (the score reached the threshold), refine (improve and score again), or "
        "user_input (the iteration limit is reached, or the last two improvements were both under "
        "5 points: ask the user). A completed or user_input loop takes no more scores."
    ),
    instant=True,
)
async def decide_loop_next_action(
    ctx: Context[AppServices, Any],
    loop_id: LoopId,
    current_score: Annotated[int, Field(description="The quality score of the latest work, 0 to 100.")],
) -> LoopDecision:
    check_score(current_score)  # before touching the state: a bad score changes nothing
    loop = await _run(app_services(ctx).loops.decide, loop_id, current_score)
    return LoopDecision.of_loop(loop)


@tool(
    "get_loop_status",
    description=(
        "A refinement loop's status, type, threshold, iteration, current score, score history and "
        "creation time, with the reason for its status."
    ),
    instant=True,
)
async def get_loop_status(ctx: Context[AppServices, Any], loop_id: LoopId) -> LoopState:
    return LoopState.of_loop(await _run(app_services(ctx).loops.get, loop_id))


@tool(
    "list_active_loops",
    description="The refinement loops kept (the 10 most recent, finished ones included), newest first.",
    instant=True,
)
async def list_active_loops(ctx: Context[AppServices, Any]) -> Loops:
    loops = [LoopSummary.pick(loop) for loop in await _run(app_services(ctx).loops.newest_first)]
    return Loops(loops=loops, count=len(loops))
