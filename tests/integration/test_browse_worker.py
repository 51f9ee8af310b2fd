"""The browsing jobs as the web view calls them (``transport.run``), in-process with the real model
and the real embedded vector store, on a store populated with the sample experiences: the map
shows the sample themes as separate groups with get_clusters' labels, a search by meaning pages
through one axis, the audit finds statements said twice in other words, the overview counts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from learning_memory.cli.samples import demo_entries
from learning_memory.composition import in_process_executor
from learning_memory.server.transport.inline import InlineTransport
from learning_memory.shared.contracts.browse import (
    AUDIT,
    BROWSE_EXPERIENCES,
    CLUSTER_MAP,
    OVERVIEW,
    AuditRequest,
    BrowseExperiencesRequest,
    ClusterMapRequest,
    OverviewRequest,
)
from learning_memory.shared.contracts.experiences import PERSIST_EXPERIENCE, PersistExperienceRequest
from learning_memory.shared.contracts.learning import GET_CLUSTERS, GetClustersRequest
from learning_memory.shared.contracts.memory import STORE_MEMORY, StoreMemoryRequest
from tests.browse_data import entry, memory
from tests.mcp_thread import inline_settings

pytestmark = [pytest.mark.slow]
SAMPLES = demo_entries()
MODEL = "all-MiniLM-L6-v2"
SAID_TWICE = (
    "Run the database migrations before the integration tests.",
    "Run the database migrations before running the integration tests",
)
IN_OTHER_WORDS = "The integration tests need the database migrated first"  # 0.90-0.91 to both


@pytest.fixture
async def jobs(tmp_path: Path) -> AsyncIterator[InlineTransport]:
    transport = InlineTransport(inline_settings(tmp_path, MODEL), in_process_executor)
    try:
        for number in range(len(SAMPLES)):
            request = PersistExperienceRequest(entry=entry(SAMPLES, number))
            await transport.run(PERSIST_EXPERIENCE, request, budget_s=120)
        for minutes, text in enumerate((*SAID_TWICE, IN_OTHER_WORDS, "Use uv rather than pip here")):
            await transport.run(
                STORE_MEMORY, StoreMemoryRequest(memory=memory(text, minutes=minutes)), budget_s=60
            )
        yield transport
    finally:
        await transport.close()


async def test_browsing_a_real_store(jobs: InlineTransport) -> None:
    themes = {entry(SAMPLES, n).id: sample.theme for n, sample in enumerate(SAMPLES)}

    # The map: get_clusters' clusters, each a group of one theme, apart from the others.
    clusters = await jobs.run(GET_CLUSTERS, GetClustersRequest(axis="full"), budget_s=120)
    found = await jobs.run(CLUSTER_MAP, ClusterMapRequest(axis="full"), budget_s=120)
    assert found.clustering_id == clusters.clustering_id and len(found.points) == len(SAMPLES)
    assert [(c.cluster_id, c.size) for c in found.clusters] == [
        (c.cluster_id, c.size) for c in clusters.clusters
    ]
    places = np.array([(p.x, p.y) for p in found.points])
    theme = np.array([themes[p.ghap_id] for p in found.points])
    near = np.argsort(np.linalg.norm(places[:, None] - places[None], axis=2), axis=1)[:, 1:6]
    assert float((theme[near] == theme[:, None]).mean()) > 0.9  # a point's neighbours share its theme
    again = await jobs.run(CLUSTER_MAP, ClusterMapRequest(axis="full"), budget_s=60)
    assert again.cached and again.points == found.points

    # A search by meaning, in words no experience uses, under a filter; its pages add up.
    query = "timing problems where tests fail only sometimes"
    request = BrowseExperiencesRequest(query=query, project="repo-a", limit=5)
    first = await jobs.run(BROWSE_EXPERIENCES, request, budget_s=60)
    assert first.searched and all(hit.project == "repo-a" for hit in first.results)
    best_theme = themes[first.results[0].ghap_id]
    assert sum(themes[hit.ghap_id] == best_theme for hit in first.results) >= 4
    second = await jobs.run(BROWSE_EXPERIENCES, request.model_copy(update={"offset": 5}), budget_s=60)
    assert not {h.ghap_id for h in first.results} & {h.ghap_id for h in second.results}
    listed = await jobs.run(BROWSE_EXPERIENCES, BrowseExperiencesRequest(source="auto"), budget_s=60)
    assert listed.total == sum(1 for n in range(len(SAMPLES)) if n % 5 == 0)

    # The audit: the statement said twice is one group at the default bar; its rewording joins at 0.9.
    report = await jobs.run(AUDIT, AuditRequest(project="repo-a"), budget_s=120)
    [group] = report.duplicate_memories.groups
    assert [item.text for item in group.items] == list(SAID_TWICE) and group.similarity > 0.92
    looser = await jobs.run(AUDIT, AuditRequest(project="repo-a", similarity=0.9), budget_s=120)
    assert len(looser.duplicate_memories.groups[0].items) == 3
    assert report.never_injected.total == len(SAMPLES) // 2 + 4 and report.stale.total == 0

    summary = await jobs.run(OVERVIEW, OverviewRequest(), budget_s=60)
    counts = {c.project: c for c in summary.projects}
    assert (counts["repo-a"].experiences, counts["repo-a"].memories) == (len(SAMPLES) // 2, 4)
    assert counts["repo-b"].experiences == len(SAMPLES) // 2 and summary.sessions == []
