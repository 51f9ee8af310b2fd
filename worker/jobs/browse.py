"""Browsing jobs for the local web view: experiences page by page, an axis's cluster map, the
audit and the overview (the work itself: ``worker.browse``). They only read what is stored.

``worker.browse`` is imported when a job runs, not with this module: it uses the learning and
code jobs' functions, and importing any job module imports this package, this module with it.
"""

from __future__ import annotations

from learning_memory.shared.contracts.browse import (
    AUDIT,
    BROWSE_EXPERIENCES,
    CLUSTER_MAP,
    OVERVIEW,
    AuditRequest,
    AuditResponse,
    BrowseExperiencesRequest,
    BrowseExperiencesResponse,
    ClusterMapRequest,
    ClusterMapResponse,
    OverviewRequest,
    OverviewResponse,
)
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun


@job(BROWSE_EXPERIENCES)
async def browse_experiences(run: JobRun, request: BrowseExperiencesRequest) -> BrowseExperiencesResponse:
    from learning_memory.worker.browse.experiences import browse

    return await browse(run, request)


@job(CLUSTER_MAP)
async def cluster_map(run: JobRun, request: ClusterMapRequest) -> ClusterMapResponse:
    from learning_memory.worker.browse.cluster_map import cluster_map

    return await cluster_map(run, request)


@job(AUDIT)
async def audit(run: JobRun, request: AuditRequest) -> AuditResponse:
    from learning_memory.worker.browse.audit import audit

    return await audit(run, request)


@job(OVERVIEW)
async def overview(run: JobRun, request: OverviewRequest) -> OverviewResponse:
    from learning_memory.worker.browse.overview import overview

    return await overview(run, request)
