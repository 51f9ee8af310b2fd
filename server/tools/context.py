"""Context tools: assemble_context (experiences, values and memories for a query, within a token
budget), get_premortem_warnings (what went wrong before on similar goals) and expand_context
(the whole record behind an id of a one-line summary)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from learning_memory.server.fail_open import within_budget
from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.tool_errors import tool
from learning_memory.server.tools.inputs import utf8_safe
from learning_memory.shared.contracts.context import (
    ASSEMBLE_CONTEXT,
    EXPAND_CONTEXT,
    MAX_EXPAND_IDS,
    PREMORTEM,
    AssembleContextRequest,
    AssembleContextResponse,
    ExpandContextRequest,
    PremortemRequest,
)
from learning_memory.shared.contracts.experiences import Domain
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
MAX_BUDGET = 4_000
MAX_WARNINGS = 10


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
) -> list[dict[str, Any]]:
    request = PremortemRequest(
        goal=goal,
        hypothesis=hypothesis,
        domain=domain,
        limit=limit,
        min_score=app.settings.premortem_min_score,
    )
    found = await app.jobs.run(PREMORTEM, request, budget_s=timeout_s)
    return [warning.model_dump(mode="json") for warning in found.warnings]


async def premortem_or_nothing(app: AppServices, goal: str, hypothesis: str) -> list[dict[str, Any]]:
    """start_ghap's warnings: starting to track a hypothesis never waits on, or fails for, the worker.
    Any domain: a lesson learned while debugging warns a refactoring as well."""

    async def work() -> list[dict[str, Any]]:
        return await premortem(app, goal, hypothesis, None, 3, app.settings.hook_budget_s)

    return await within_budget(app, "premortem", work, [])


def register(server: MCPServer[AppServices]) -> None:
    @tool(
        server,
        name="assemble_context",
        description=(
            "What you learned before that bears on a task: past experiences (GHAP outcomes, lessons, root "
            "causes), validated values and memories, ranked together by relevance, deduplicated, cut to a "
            "token budget. A line each with an id; expand_context(ids) gives the whole records."
        ),
    )
    async def assemble_context(
        ctx: Context[AppServices, Any],
        query: Annotated[str, Field(description="The task or question, in plain words.")],
        budget_tokens: Annotated[
            int, Field(description=f"At most this many tokens, 50 to {MAX_BUDGET}.")
        ] = 600,
        min_score: Annotated[
            float, Field(description="Relevance (cosine similarity, 0 to 1) an item needs; default 0.3.")
        ] = 0.3,
    ) -> dict[str, Any]:
        if not 50 <= budget_tokens <= MAX_BUDGET:
            raise ValidationError(f"budget_tokens must be between 50 and {MAX_BUDGET} (got {budget_tokens})")
        if not 0.0 <= min_score <= 1.0:
            raise ValidationError(f"min_score must be between 0 and 1 (got {min_score})")
        query = utf8_safe(query).strip()[:MAX_CONTENT_CHARS]
        if not query:
            return {"items": [], "count": 0, "tokens": 0, "text": ""}
        request = AssembleContextRequest(query=query, budget_tokens=budget_tokens, min_score=min_score)
        found = await await_job(ctx, ASSEMBLE_CONTEXT, request)
        return {
            "items": [item.model_dump(mode="json") for item in found.items],
            "count": len(found.items),
            "tokens": found.tokens,
            "text": render(found, "Relevant past work (expand_context(ids) for whole records):"),
        }

    @tool(
        server,
        name="get_premortem_warnings",
        description=(
            "Before you commit to a plan: past experiences on similar goals that were falsified or "
            "abandoned, with their root causes and what worked instead. start_ghap returns these too."
        ),
    )
    async def get_premortem_warnings(
        ctx: Context[AppServices, Any],
        goal: Annotated[str, Field(description="What you are about to try to achieve.")],
        hypothesis: Annotated[str | None, Field(description="What you believe, if you know yet.")] = None,
        domain: Domain | None = None,
        limit: Annotated[int, Field(description=f"1 to {MAX_WARNINGS} (default 3).")] = 3,
    ) -> dict[str, Any]:
        if not 1 <= limit <= MAX_WARNINGS:
            raise ValidationError(f"limit must be between 1 and {MAX_WARNINGS} (got {limit})")
        goal = utf8_safe(goal).strip()[:MAX_CONTENT_CHARS]
        if not goal:
            raise ValidationError("goal must not be empty")
        hypothesis = utf8_safe(hypothesis).strip()[:MAX_CONTENT_CHARS] if hypothesis else None
        app = app_services(ctx)
        warnings = await premortem(app, goal, hypothesis or None, domain, limit, app.settings.tool_wait_s)
        return {"warnings": warnings, "count": len(warnings)}

    @tool(
        server,
        name="expand_context",
        description=(
            "The whole records behind context ids (exp:…, val:…, mem:…) from assemble_context, the "
            "session brief or a prompt's injected context."
        ),
    )
    async def expand_context(
        ctx: Context[AppServices, Any],
        ids: Annotated[list[str], Field(description=f"1 to {MAX_EXPAND_IDS} ids, e.g. exp:<uuid>.")],
    ) -> dict[str, Any]:
        if not 1 <= len(ids) <= MAX_EXPAND_IDS:
            raise ValidationError(f"give between 1 and {MAX_EXPAND_IDS} ids (got {len(ids)})")
        found = await await_job(ctx, EXPAND_CONTEXT, ExpandContextRequest(ids=[i.strip() for i in ids]))
        return {
            "items": [item.model_dump(mode="json") for item in found.items],
            "missing": found.missing,
            "count": len(found.items),
        }
