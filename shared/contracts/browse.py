"""Browsing what the memory learned, for the local web view: experiences page by page, a map of an
axis's clusters, an audit of what may need a person's eye, and an overview per project.

Read-only jobs: they change nothing stored (the cluster map keeps its layout in the worker's
memory, per clustering).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from learning_memory.shared.contracts.code import ProjectInfo
from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.contracts.experiences import (
    Axis,
    Domain,
    ExperienceHit,
    OutcomeStatus,
    Source,
    Stale,
)
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

MAX_QUERY_CHARS = 1_000
DUPLICATE_SIMILARITY = 0.92  # cosine at or above which two records say the same

# --- browse_experiences ----------------------------------------------------------------


class BrowseExperiencesRequest(Contract):
    """Stored experiences matching every filter given: newest first, or, with a ``query``, best
    first by meaning and words on ``axis`` (as search_experiences ranks)."""

    project: str | None = None
    outcome: OutcomeStatus | None = None
    domain: Domain | None = None
    source: Source | None = None
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    query: str | None = Field(default=None, max_length=MAX_QUERY_CHARS)
    axis: Axis = "full"  # the axis a query is searched on (listing reads the full axis)
    offset: int = Field(default=0, ge=0, le=100_000)
    limit: int = Field(default=50, ge=1, le=200)


class BrowseExperiencesResponse(Contract):
    # ``score``: the search relevance when ``searched``, else 0.0. ``id`` is the point id on the
    # axis read; ``ghap_id`` names the experience.
    results: list[ExperienceHit]
    total: int  # matching the filters (searched: the candidates the search found)
    offset: int
    searched: bool


# --- cluster_map -----------------------------------------------------------------------


class ClusterMapRequest(Contract):
    axis: Axis = "full"
    project: str | None = None  # only this project's experiences shown (clusters are the axis's)


class MapPoint(Contract):
    id: str  # the point id on the axis
    ghap_id: str
    x: float  # in [-1, 1], the same for a clustering whatever the project shown
    y: float
    label: int  # the cluster's label (as get_clusters numbers them); -1: noise
    goal: str  # one line, cut short
    outcome: OutcomeStatus | None = None
    source: Source = "agent"
    domain: Domain | None = None
    confidence_tier: str | None = None


class MapValue(Contract):
    id: str
    text: str
    # "current": validated against this very clustering; "fits": validated against an earlier
    # one, and this cluster (holding most of its experiences) still validates it.
    state: Literal["current", "fits"]


class MapCluster(Contract):
    cluster_id: str  # cluster_{axis}_{label}, as get_clusters names it
    label: int
    size: int  # members in the whole clustering
    shown: int  # of them among the points shown
    x: float  # the middle of its shown points (0 when none)
    y: float
    members: list[str]  # point ids of the shown members, most typical (closest to the centroid) first
    values: list[MapValue] = Field(default_factory=list)


class ClusterMapResponse(Contract):
    axis: Axis
    project: str | None
    clustering_id: str
    experience_count: int  # in the clustering
    points: list[MapPoint]
    clusters: list[MapCluster]  # largest first; only those with shown members
    noise_count: int  # among the points shown
    layout_seconds: float  # how long the layout took when it was computed
    cached: bool  # the layout was already held for this clustering


# --- audit -------------------------------------------------------------------------------


class AuditRequest(Contract):
    project: str | None = None  # None: every project, and items of none
    similarity: float = Field(default=DUPLICATE_SIMILARITY, ge=0.5, le=1.0)
    limit: int = Field(default=20, ge=1, le=200)  # of each list
    # The newest records of each kind whose neighbours are looked at for duplicates.
    scan_limit: int = Field(default=1_000, ge=1, le=20_000)


class AuditItem(Contract):
    kind: ContextKind
    id: str  # memory or value point id; an experience's ghap id
    text: str  # one line, cut short
    created_at: datetime | None = None
    project: str | None = None
    stale: Stale | None = None


class DuplicatePair(Contract):
    a: str  # AuditItem ids
    b: str
    similarity: float


class DuplicateGroup(Contract):
    items: list[AuditItem]  # oldest first
    pairs: list[DuplicatePair]  # most similar first
    similarity: float  # the highest of its pairs


class DuplicateList(Contract):
    groups: list[DuplicateGroup]  # most similar first
    total: int  # groups found
    scanned: int  # records whose neighbours were looked at
    records: int  # records there are (scanned < records: the oldest were not looked at)


class ItemList(Contract):
    items: list[AuditItem]
    total: int


class MovedValue(Contract):
    value: AuditItem
    axis: Axis
    cluster_id: str  # as stored
    clustering_id: str  # the clustering it was validated against
    current_clustering_id: str | None  # None: the axis cannot be clustered now
    # "gone": no current cluster holds most of its experiences; "no_longer_fits": one does, but
    # the value is now too far from its centroid (validate_value's test).
    state: Literal["gone", "no_longer_fits"]
    current_cluster_id: str | None = None
    reason: str


class MovedValues(Contract):
    values: list[MovedValue]
    total: int
    checked: int  # values looked at


class AuditResponse(Contract):
    project: str | None
    duplicate_memories: DuplicateList
    duplicate_experiences: DuplicateList  # on the full axis
    stale: ItemList  # anchored code changed or gone since: newest first
    never_injected: ItemList  # never shown to the agent as far as the records tell: oldest first
    moved_values: MovedValues


# --- overview ----------------------------------------------------------------------------


class OverviewRequest(Contract):
    project: str | None = None  # None: every project
    sessions: int = Field(default=10, ge=0, le=100)
    injections: int = Field(default=20, ge=0, le=200)


class ProjectCounts(Contract):
    project: str | None  # None: records stored with no project
    memories: int
    experiences: int
    experiences_agent: int
    experiences_auto: int
    values: int
    stale: int  # memories, experiences and values whose anchored code changed or went
    set_aside: int = 0  # values retired and experiences marked wrong by a person (curation)


class SessionSummary(Contract):
    session_id: str
    project: str
    worktree: str | None
    branch: str | None
    started_at: datetime
    last_event_at: datetime
    events: int
    prompts: int
    runs: int
    failed_runs: int
    edits: int
    injected: int  # items shown to the agent
    first_prompt: str | None  # one line, cut short


InjectionOutcome = Literal["helped", "not_helped", "undecided"]


class Injection(Contract):
    item: str  # context id: exp:<ghap id>, mem:<id>, val:<id>
    kind: ContextKind
    id: str
    text: str | None  # one line; None when the record is gone
    via: str
    shown_at: datetime
    session_id: str
    project: str
    outcome: InjectionOutcome  # of the episode that followed; undecided until mined and decided


class OverviewResponse(Contract):
    projects: list[ProjectCounts]  # most experiences first
    indexed: list[ProjectInfo]  # every code index (list_indexed_projects; named by whoever indexed)
    sessions: list[SessionSummary]  # latest first (the session logs kept)
    injections: list[Injection]  # latest first


BROWSE_EXPERIENCES: JobSpec[BrowseExperiencesRequest, BrowseExperiencesResponse] = JobSpec(
    "browse_experiences",
    BrowseExperiencesRequest,
    BrowseExperiencesResponse,
    Queue.INTERACTIVE,
    timeout_s=120,
)
# Clusters the axis when its clustering is not held, then lays it out (a child process).
CLUSTER_MAP: JobSpec[ClusterMapRequest, ClusterMapResponse] = JobSpec(
    "cluster_map", ClusterMapRequest, ClusterMapResponse, Queue.INTERACTIVE, timeout_s=300
)
AUDIT: JobSpec[AuditRequest, AuditResponse] = JobSpec(
    "audit", AuditRequest, AuditResponse, Queue.INTERACTIVE, timeout_s=300
)
OVERVIEW: JobSpec[OverviewRequest, OverviewResponse] = JobSpec(
    "overview", OverviewRequest, OverviewResponse, Queue.INTERACTIVE, timeout_s=120
)
