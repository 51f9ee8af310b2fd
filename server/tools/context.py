"""Context tools: assemble_context (experiences, values and memories for a query, within a token
budget), get_premortem_warnings (what went wrong before on similar goals) and expand_context
(the whole record behind an id of a one-line summary)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.services.context_assembly import premortem, render
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.context import (
    ASSEMBLE_CONTEXT,
    EXPAND_CONTEXT,
    MAX_EXPAND_IDS,
    AssembleContextRequest,
    ContextItem,
    ExpandContextRequest,
    ExpandContextResponse,
    PremortemResponse,
)
from learning_memory.shared.contracts.experiences import Domain
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS
from learning_memory.shared.errors import ValidationError

MAX_BUDGET = 4_000
MAX_WARNINGS = 10


class AssembledContext(BaseModel):
    """assemble_context's answer: the items, best first, and the block the agent reads."""

    items: list[ContextItem]
    count: int
    tokens: int = Field(description="Tokens of the items' lines, ids included.")
    text: str = Field(description="A header, then a line per item with its id (empty when none).")


class PremortemWarnings(PremortemResponse):
    """get_premortem_warnings' answer: past experiences on similar goals, most similar first."""

    count: int


class ExpandedContext(ExpandContextResponse):
    """expand_context's answer: the records found, and the ids that name none."""

    count: int


@tool(
    "assemble_context",
    description=(
        "What you learned before that bears on a task: past experiences (GHAP outcomes, lessons, root "
        "causes), validated values and memories, ranked together by relevance, deduplicated, cut to a "
        "token budget. A line each with an id; expand_context(ids) gives the whole records."
    ),
)
async def assemble_context(
    ctx: Context[AppServices, Any],
    query: Annotated[str, Field(description="The task or question, in plain words.")],
    budget_tokens: Annotated[int, Field(description=f"At most this many tokens, 50 to {MAX_BUDGET}.")] = 600,
    min_score: Annotated[
        float, Field(description="Relevance (cosine similarity, 0 to 1) the best item needs; default 0.3.")
    ] = 0.3,
) -> AssembledContext:
    if not 50 <= budget_tokens <= MAX_BUDGET:
        raise ValidationError(f"budget_tokens must be between 50 and {MAX_BUDGET} (got {budget_tokens})")
    if not 0.0 <= min_score <= 1.0:
        raise ValidationError(f"min_score must be between 0 and 1 (got {min_score})")
    query = utf8_safe(query).strip()[:MAX_CONTENT_CHARS]
    if not query:
        return AssembledContext(items=[], count=0, tokens=0, text="")
    request = AssembleContextRequest(query=query, budget_tokens=budget_tokens, min_score=min_score)
    found = await await_job(ctx, ASSEMBLE_CONTEXT, request)
    return AssembledContext(
        items=found.items,
        count=len(found.items),
        tokens=found.tokens,
        text=render(found, "Relevant past work (expand_context(ids) for whole records):"),
    )


@tool(
    "get_premortem_warnings",
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
) -> PremortemWarnings:
    if not 1 <= limit <= MAX_WARNINGS:
        raise ValidationError(f"limit must be between 1 and {MAX_WARNINGS} (got {limit})")
    goal = utf8_safe(goal).strip()[:MAX_CONTENT_CHARS]
    if not goal:
        raise ValidationError("goal must not be empty")
    hypothesis = utf8_safe(hypothesis).strip()[:MAX_CONTENT_CHARS] if hypothesis else None
    app = app_services(ctx)
    warnings = await premortem(app, goal, hypothesis or None, domain, limit, app.settings.tool_wait_s)
    return PremortemWarnings(warnings=warnings, count=len(warnings))


@tool(
    "expand_context",
    description=(
        "The whole records behind context ids (exp:…, val:…, mem:…) from assemble_context, the "
        "session brief or a prompt's injected context."
    ),
)
async def expand_context(
    ctx: Context[AppServices, Any],
    ids: Annotated[list[str], Field(description=f"1 to {MAX_EXPAND_IDS} ids, e.g. exp:<uuid>.")],
) -> ExpandedContext:
    if not 1 <= len(ids) <= MAX_EXPAND_IDS:
        raise ValidationError(f"give between 1 and {MAX_EXPAND_IDS} ids (got {len(ids)})")
    found = await await_job(ctx, EXPAND_CONTEXT, ExpandContextRequest(ids=[i.strip() for i in ids]))
    return ExpandedContext(items=found.items, missing=found.missing, count=len(found.items))
