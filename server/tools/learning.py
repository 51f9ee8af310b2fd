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

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.background import spawn
from learning_memory.server.hooks.values_cache import refresh_values_file
from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.services.inputs import utf8_safe
from learning_memory.server.tool_answers import Answer, Results
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.experiences import AXES, Axis
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    MAX_VALUE_CHARS,
    MIN_EXPERIENCES,
    STORE_VALUE,
    VALIDATE_VALUE,
    ClusterMember,
    GetClusterMembersRequest,
    GetClusterMembersResponse,
    GetClustersRequest,
    GetClustersResponse,
    ListValuesRequest,
    StoreValueRequest,
    ValidateValueRequest,
    ValueRecord,
    ValueValidation,
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


class Value(Answer, of=ValueRecord, exclude=("member_ghap_ids", "centroid_distance", "threshold_distance")):
    """A stored value as the tools show it (without the validation's internals)."""


class Member(Answer, of=ClusterMember, exclude=("score",)):
    """An experience of the cluster, with its whole GHAP story."""

    similarity_to_centroid: float = Field(ge=0.0, le=1.0, description="Cosine similarity to the centroid.")


class _MembersHead(Answer, of=GetClusterMembersResponse, fields=("cluster_id", "axis")):
    members: list[Member] = Field(description="Closest to the centroid first.")


class ClusterMembers(_MembersHead, of=GetClusterMembersResponse, fields=("count", "size", "clustering_id")):
    """get_cluster_members' answer."""


@tool(
    "get_clusters",
    description=(
        "Cluster the resolved experiences on one axis (full, strategy, surprise, root_cause) and list "
        "the clusters, largest first, with their average confidence weight. Needs at least "
        f"{MIN_EXPERIENCES} experiences on the axis. The clustering is kept until an experience on the "
        "axis is added."
    ),
)
async def get_clusters(ctx: Context[AppServices, Any], axis: Axis) -> GetClustersResponse:
    return await await_job(ctx, GET_CLUSTERS, GetClustersRequest(axis=axis))


@tool(
    "get_cluster_members",
    description=(
        "The experiences of one cluster, most typical first (closest to the cluster's centroid), "
        "with their whole GHAP story."
    ),
)
async def get_cluster_members(
    ctx: Context[AppServices, Any],
    cluster_id: Annotated[str, Field(description=CLUSTER_ID_HELP)],
    limit: Annotated[int, Field(description=f"1 to {MAX_LIMIT} (default 50).")] = 50,
) -> ClusterMembers:
    axis, label = parse_cluster_id(cluster_id)
    request = GetClusterMembersRequest(axis=axis, label=label, limit=_limit(limit))
    found = await await_job(ctx, GET_CLUSTER_MEMBERS, request)
    members = [Member.pick(member, similarity_to_centroid=member.score) for member in found.members]
    return ClusterMembers.pick(found, members=members)


@tool(
    "validate_value",
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
) -> ValueValidation:
    checked = _value_text(text)
    axis, label = parse_cluster_id(cluster_id)
    return await await_job(ctx, VALIDATE_VALUE, ValidateValueRequest(text=checked, axis=axis, label=label))


@tool(
    "store_value",
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
) -> Value:
    checked = _value_text(text)
    cluster_axis, label = parse_cluster_id(cluster_id)
    if cluster_axis != axis:
        raise ValidationError(f"cluster_id {cluster_id!r} is a cluster of axis {cluster_axis}, not {axis}")
    request = StoreValueRequest(
        id=str(uuid.uuid4()), text=checked, axis=axis, label=label, created_at=datetime.now(UTC)
    )
    stored = await await_job(ctx, STORE_VALUE, request)
    app = app_services(ctx)
    spawn(refresh_values_file(app.jobs, app.settings), name="values-cache")
    return Value.pick(stored)


@tool(
    "list_values",
    description=(
        "Stored values, best supported first (support × weight: a value's weight halves each "
        "half-life without an experience that bears it out), then the newest; with each one's "
        "age_days since that evidence, support and weight; optionally of one axis."
    ),
)
async def list_values(
    ctx: Context[AppServices, Any],
    axis: Axis | None = None,
    limit: Annotated[int, Field(description=f"1 to {MAX_LIMIT} (default 20).")] = 20,
) -> Results[Value]:
    found = await await_job(ctx, LIST_VALUES, ListValuesRequest(axis=axis, limit=_limit(limit)))
    return Results[Value].of([Value.pick(record) for record in found.results])
