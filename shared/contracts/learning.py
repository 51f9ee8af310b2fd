"""Learning: clusters of experiences per axis, and validated values.

A cluster id names a cluster of one clustering: ``cluster_{axis}_{label}``. Labels are
numbered by size (0 is the largest) in the clustering the worker holds for the axis, which
stays the same until an experience on that axis is stored or replaced. Every answer carries
that clustering's ``clustering_id``, and a stored value keeps it (with its cluster's members),
so a later re-clustering never silently changes what a value's ``cluster_id`` meant.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import Field

from learning_memory.shared.contracts.experiences import AXES, Anchor, Axis, ExperienceHit, Stale
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

MIN_EXPERIENCES = 20  # per axis, for get_clusters: fewer make no meaningful clusters
MAX_VALUE_CHARS = 500
VALUES_COLLECTION = "values"
_CLUSTER_ID = re.compile(rf"^(?:cluster_)?({'|'.join(AXES)})_(0|[1-9][0-9]{{0,8}})$")


def cluster_id(axis: str, label: int) -> str:
    return f"cluster_{axis}_{label}"


def parse_cluster_id(value: str) -> tuple[Axis, int]:
    """``cluster_{axis}_{label}`` or ``{axis}_{label}`` → (axis, label); ValidationError otherwise."""
    match = _CLUSTER_ID.match(value.strip())
    if match is None:
        raise ValidationError(
            f"Invalid cluster_id {value!r}: expected cluster_{{axis}}_{{label}} (e.g. cluster_root_cause_2) "
            f"or {{axis}}_{{label}} (e.g. full_0), where axis is one of {', '.join(AXES)} and label is "
            "a cluster number from get_clusters"
        )
    axis: Axis = match.group(1)  # type: ignore[assignment]
    return axis, int(match.group(2))


class ClusterInfo(Contract):
    cluster_id: str
    label: int
    size: int
    avg_weight: float = Field(ge=0.0, le=1.0)


class GetClustersRequest(Contract):
    axis: Axis


class GetClustersResponse(Contract):
    axis: Axis
    clusters: list[ClusterInfo]  # largest first
    count: int
    noise_count: int
    clustering_id: str
    experience_count: int


class GetClusterMembersRequest(Contract):
    axis: Axis
    label: int = Field(ge=0)
    limit: int = Field(default=50, ge=1, le=100)


class ClusterMember(ExperienceHit):
    """An experience of the cluster; ``score`` is its cosine similarity to the cluster's centroid."""


class GetClusterMembersResponse(Contract):
    cluster_id: str
    axis: Axis
    members: list[ClusterMember]  # closest to the centroid first
    count: int
    size: int
    clustering_id: str


class ValidateValueRequest(Contract):
    text: str = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    axis: Axis
    label: int = Field(ge=0)


class ValueValidation(Contract):
    valid: bool
    similarity: float | None  # cosine similarity to the centroid, in [0, 1], when valid
    centroid_distance: float
    threshold_distance: float  # mean + k·std of the members' distances to the centroid
    reason: str | None
    cluster_id: str
    cluster_size: int
    clustering_id: str


class StoreValueRequest(Contract):
    # Chosen by the server, so a retried job writes the very same point.
    id: str
    text: str = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    axis: Axis
    label: int = Field(ge=0)
    created_at: datetime


class ValueRecord(Contract):
    id: str
    text: str
    axis: Axis
    cluster_id: str
    cluster_size: int
    similarity_to_centroid: float = Field(ge=0.0, le=1.0)
    created_at: datetime
    # The clustering it was validated against, and that cluster's experiences (ghap ids).
    clustering_id: str
    member_ghap_ids: list[str]
    centroid_distance: float
    threshold_distance: float
    # How much it is still worth (worker.learning.decay): days since the last experience that
    # bore it out (its cluster when stored, or one stored later close enough to it), how many
    # experiences have, and the weight that age leaves it (1.0 fresh, halved each half-life).
    age_days: float = Field(default=0.0, ge=0.0)
    support: int = Field(default=0, ge=0)
    weight: float = Field(default=1.0, ge=0.0, le=1.0)
    # The files a good share of those experiences are anchored to, in one repository
    # (worker.learning.value_anchors): reading one of them brings the value up.
    anchors: list[Anchor] = Field(default_factory=list)
    project: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # What became of that code since (worker.jobs.item_staleness); left out while unknown.
    stale: Stale | None = Field(default=None, exclude_if=lambda value: value is None)
    # Retired by a person (shared.contracts.curation): kept, listed only when asked for, never
    # injected; told only when true.
    retired: bool = Field(default=False, exclude_if=lambda value: not value)


class ListValuesRequest(Contract):
    axis: Axis | None = None
    limit: int = Field(default=20, ge=1, le=100)
    offset: int = Field(default=0, ge=0, le=1_000_000)  # the first ones skipped (a page further)
    include_retired: bool = False  # retired values too (curation); by default they are left out
    # The experiences each was validated against (the web view's evidence); the tool leaves them out.
    include_members: bool = False
    # Only these values (the web view's page of one), whatever their rank; ids not stored are left out.
    ids: list[str] = Field(default_factory=list, max_length=100)


class ListValuesResponse(Contract):
    results: list[ValueRecord]  # by support × weight, then newest first
    count: int


GET_CLUSTERS: JobSpec[GetClustersRequest, GetClustersResponse] = JobSpec(
    "get_clusters", GetClustersRequest, GetClustersResponse, Queue.INTERACTIVE, timeout_s=300
)
GET_CLUSTER_MEMBERS: JobSpec[GetClusterMembersRequest, GetClusterMembersResponse] = JobSpec(
    "get_cluster_members",
    GetClusterMembersRequest,
    GetClusterMembersResponse,
    Queue.INTERACTIVE,
    timeout_s=300,
)
VALIDATE_VALUE: JobSpec[ValidateValueRequest, ValueValidation] = JobSpec(
    "validate_value", ValidateValueRequest, ValueValidation, Queue.INTERACTIVE, timeout_s=300
)
STORE_VALUE: JobSpec[StoreValueRequest, ValueRecord] = JobSpec(
    "store_value", StoreValueRequest, ValueRecord, Queue.INTERACTIVE, timeout_s=300
)
LIST_VALUES: JobSpec[ListValuesRequest, ListValuesResponse] = JobSpec(
    "list_values", ListValuesRequest, ListValuesResponse, Queue.INTERACTIVE, timeout_s=60
)
