"""What the agent is shown of its past work: context assembled for a query and rendered as one
line per item, and premortem warnings (what went wrong before on similar goals).

Shared by the context tools, start_ghap (its warnings) and the prompt hook.
"""

from __future__ import annotations

from learning_memory.server.services.fail_open import within_budget
from learning_memory.server.services.lifespan import AppServices
from learning_memory.shared.contracts.context import (
    ASSEMBLE_CONTEXT,
    PREMORTEM,
    AssembleContextRequest,
    AssembleContextResponse,
    PremortemRequest,
    PremortemWarning,
)
from learning_memory.shared.contracts.experiences import Domain


def render(response: AssembleContextResponse, header: str) -> str:
    """The block the agent reads: a header, then a line per item with its id."""
    if not response.items:
        return ""
    return "\n".join([header, *(f"- [{item.id}] {item.text}" for item in response.items)])


async def assemble(
    app: AppServices, query: str, *, budget_tokens: int, min_score: float, max_items: int, timeout_s: float
) -> AssembleContextResponse:
    request = AssembleContextRequest(
        query=query, budget_tokens=budget_tokens, min_score=min_score, max_items=max_items
    )
    return await app.jobs.run(ASSEMBLE_CONTEXT, request, budget_s=timeout_s)


async def premortem(
    app: AppServices, goal: str, hypothesis: str | None, domain: Domain | None, limit: int, timeout_s: float
) -> list[PremortemWarning]:
    request = PremortemRequest(
        goal=goal,
        hypothesis=hypothesis,
        domain=domain,
        limit=limit,
        min_score=app.settings.premortem_min_score,
    )
    found = await app.jobs.run(PREMORTEM, request, budget_s=timeout_s)
    return found.warnings


async def premortem_or_nothing(app: AppServices, goal: str, hypothesis: str) -> list[PremortemWarning]:
    """start_ghap's warnings: starting to track a hypothesis never waits on, or fails for, the worker.
    Any domain: a lesson learned while debugging warns a refactoring as well."""

    async def work() -> list[PremortemWarning]:
        return await premortem(app, goal, hypothesis, None, 3, app.settings.hook_budget_s)

    return await within_budget(app, "premortem", work, [])
