"""search_experiences: past experiences by meaning, on one of four axes."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.services import AppServices, await_job
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.experiences import (
    SEARCH_EXPERIENCES,
    Axis,
    Domain,
    OutcomeStatus,
    SearchExperiencesRequest,
    SearchExperiencesResponse,
)
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS
from learning_memory.shared.errors import ValidationError

MAX_RESULTS = 50


class FoundExperiences(SearchExperiencesResponse):
    """search_experiences' answer: the experiences, best match first."""

    count: int


@tool(
    "search_experiences",
    description=(
        "Search resolved GHAP experiences by meaning, best match first (score 0 to 1). Axis full matches "
        "the whole story; strategy how it was approached; surprise what was unexpected; root_cause why a "
        "hypothesis was wrong."
    ),
)
async def search_experiences(
    ctx: Context[AppServices, Any],
    query: Annotated[str, Field(description="What to look for, in plain words.")],
    axis: Axis = "full",
    domain: Domain | None = None,
    outcome: OutcomeStatus | None = None,
    limit: Annotated[int, Field(description=f"1 to {MAX_RESULTS} (default 10).")] = 10,
) -> FoundExperiences:
    if not 1 <= limit <= MAX_RESULTS:
        raise ValidationError(f"limit must be between 1 and {MAX_RESULTS} (got {limit})")
    query = utf8_safe(query).strip()[:MAX_CONTENT_CHARS]
    if not query:
        return FoundExperiences(results=[], count=0)
    request = SearchExperiencesRequest(query=query, axis=axis, domain=domain, outcome=outcome, limit=limit)
    found = await await_job(ctx, SEARCH_EXPERIENCES, request)
    return FoundExperiences(results=found.results, count=len(found.results))
