"""Learning tools: get_clusters, get_cluster_members, validate_value, store_value, list_values.

Used in a retrospective: cluster the experiences of an axis, read a cluster's members, phrase
what they have in common as a value, check it against the cluster's centroid and store it.
Like the GHAP tools these refuse bad input (validation error naming the rule) instead of
repairing it. The worker does the clustering; see ``shared.contracts.learning`` for what a
cluster id means over time.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from learning_memory.server.background import spawn
from learning_memory.server.hooks.values_cache import refresh_values_cache
from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.tool_errors import tool
from learning_memory.server.tools.inputs import utf8_safe
from learning_memory.shared.contracts.experiences import AXES, Axis
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    MAX_VALUE_CHARS,
    MIN_EXPERIENCES,
    STORE_VALUE,
    VALIDATE_VALUE,
    GetClusterMembersRequest,
    GetClustersRequest,
    ListValuesRequest,
    StoreValueRequest,
    ValidateValueRequest,
    ValueRecord,
    parse_cluster_id,
)
from learning_memory.shared.errors import ValidationError

MAX_LIMIT = 100
CLUSTER_ID_HELP = (
    "cluster_{axis}_{label} as get_clusters gives it, e.g. cluster_root_cause_2 ({axis}_{label} works too)"
)


def _value_text(text: str) -> str:
    text = utf8_safe(text).strip()
    if not text:
        raise ValidationError("text must not be empty: state the value in one or two sentences")
    if len(text) > MAX_VALUE_CHARS:
        raise ValidationError(f"text is too long: {len(text):,} characters, the limit is {MAX_VALUE_CHARS}")
    return text


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be between 1 and {MAX_LIMIT} (got {limit})")
    return limit


def _value(record: ValueRecord) -> dict[str, Any]:
    return record.model_dump(
        mode="json", exclude={"member_ghap_ids", "centroid_distance", "threshold_distance"}
    )


def register(server: MCPServer[AppServices]) -> None:
    @tool(
        server,
        name="get_clusters",
        description=(
            "Cluster the resolved experiences on one axis (full, strategy, surprise, root_cause) and list "
            "the clusters, largest first, with their average confidence weight. Needs at least "
            f"{MIN_EXPERIENCES} experiences on the axis. The clustering is kept until an experience on the "
            "axis is added."
        ),
    )
    async def get_clusters(ctx: Context[AppServices, Any], axis: Axis) -> dict[str, Any]:
        found = await await_job(ctx, GET_CLUSTERS, GetClustersRequest(axis=axis))
        return found.model_dump(mode="json")

    @tool(
        server,
        name="get_cluster_members",
        description=(
            "The experiences of one cluster, most typical first (closest to the cluster's centroid), "
            "with their whole GHAP story."
        ),
    )
    async def get_cluster_members(
        ctx: Context[AppServices, Any],
        cluster_id: Annotated[str, Field(description=CLUSTER_ID_HELP)],
        limit: Annotated[int, Field(description=f"1 to {MAX_LIMIT} (default 50).")] = 50,
    ) -> dict[str, Any]:
        axis, label = parse_cluster_id(cluster_id)
        request = GetClusterMembersRequest(axis=axis, label=label, limit=_limit(limit))
        found = await await_job(ctx, GET_CLUSTER_MEMBERS, request)
        answer = found.model_dump(mode="json")
        for member in answer["members"]:
            member["similarity_to_centroid"] = member.pop("score")
        return answer

    @tool(
        server,
        name="validate_value",
        description=(
            "Check a proposed value (what a cluster's experiences teach, in one or two sentences, at most "
            f"{MAX_VALUE_CHARS} characters) against the cluster: valid when its distance to the cluster's "
            "centroid is within the members' mean distance plus one standard deviation. Returns the metrics."
        ),
    )
    async def validate_value(
        ctx: Context[AppServices, Any],
        text: Annotated[str, Field(description="The proposed value statement.")],
        cluster_id: Annotated[str, Field(description=CLUSTER_ID_HELP)],
    ) -> dict[str, Any]:
        checked = _value_text(text)
        axis, label = parse_cluster_id(cluster_id)
        found = await await_job(
            ctx, VALIDATE_VALUE, ValidateValueRequest(text=checked, axis=axis, label=label)
        )
        return found.model_dump(mode="json")

    @tool(
        server,
        name="store_value",
        description=(
            "Store a value for a cluster. It is validated first (as validate_value does) and refused, with "
            "the metrics, when it does not fit the cluster: an invalid value is never stored."
        ),
    )
    async def store_value(
        ctx: Context[AppServices, Any],
        text: Annotated[str, Field(description="The value statement.")],
        cluster_id: Annotated[str, Field(description=CLUSTER_ID_HELP)],
        axis: Annotated[Axis, Field(description=f"The cluster's axis: one of {', '.join(AXES)}.")],
    ) -> dict[str, Any]:
        checked = _value_text(text)
        cluster_axis, label = parse_cluster_id(cluster_id)
        if cluster_axis != axis:
            raise ValidationError(
                f"cluster_id {cluster_id!r} is a cluster of axis {cluster_axis}, not {axis}"
            )
        request = StoreValueRequest(
            id=str(uuid.uuid4()), text=checked, axis=axis, label=label, created_at=datetime.now(UTC)
        )
        stored = await await_job(ctx, STORE_VALUE, request)
        spawn(refresh_values_cache(app_services(ctx)), name="values-cache")
        return _value(stored)

    @tool(
        server,
        name="list_values",
        description=(
            "Stored values, those of the largest clusters first, then the newest; optionally of one axis."
        ),
    )
    async def list_values(
        ctx: Context[AppServices, Any],
        axis: Axis | None = None,
        limit: Annotated[int, Field(description=f"1 to {MAX_LIMIT} (default 20).")] = 20,
    ) -> dict[str, Any]:
        found = await await_job(ctx, LIST_VALUES, ListValuesRequest(axis=axis, limit=_limit(limit)))
        results = [_value(record) for record in found.results]
        return {"results": results, "count": len(results)}
