"""The learning jobs through Redis and a real worker process with the real model: the sample
themes come back as clusters, the clustering is cached, and a new experience persisted by the
worker makes the next call cluster again."""

from __future__ import annotations

import subprocess
import uuid
from datetime import UTC, datetime

import pytest
from sklearn.metrics import adjusted_rand_score

from learning_memory.cli.samples import demo_entries
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.experiences import PERSIST_EXPERIENCE, PersistExperienceRequest
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    STORE_VALUE,
    GetClusterMembersRequest,
    GetClustersRequest,
    ListValuesRequest,
    StoreValueRequest,
)
from learning_memory.shared.errors import ValidationError
from tests.learning_data import ghap_entry

pytestmark = [pytest.mark.slow, pytest.mark.redis]
SAMPLES = demo_entries()


async def persist(jobs: ArqTransport, numbers: range) -> None:
    for number in numbers:
        entry = ghap_entry(SAMPLES[number % len(SAMPLES)], number)
        await jobs.run(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry), budget_s=120)


async def test_clusters_from_a_real_worker(
    live_worker: subprocess.Popen[bytes], arq_jobs: ArqTransport
) -> None:
    await persist(arq_jobs, range(len(SAMPLES)))
    found = await arq_jobs.run(GET_CLUSTERS, GetClustersRequest(axis="full"), budget_s=120)
    assert found.experience_count == len(SAMPLES) and found.count >= 6

    # Every cluster is mostly one theme: the real model separates the sample themes.
    themes = {ghap_entry(sample, n).id: sample.theme for n, sample in enumerate(SAMPLES)}
    truth, labels = [], []
    for cluster in found.clusters:
        request = GetClusterMembersRequest(axis="full", label=cluster.label, limit=100)
        members = await arq_jobs.run(GET_CLUSTER_MEMBERS, request, budget_s=60)
        assert members.size == cluster.size == members.count
        truth += [themes[m.ghap_id] for m in members.members]
        labels += [cluster.label] * members.count
    assert adjusted_rand_score(truth, labels) > 0.9

    # Cached: the same clustering until the axis changes; then a new one with the new point.
    again = await arq_jobs.run(GET_CLUSTERS, GetClustersRequest(axis="full"), budget_s=60)
    assert again == found
    await persist(arq_jobs, range(len(SAMPLES), len(SAMPLES) + 1))
    fresh = await arq_jobs.run(GET_CLUSTERS, GetClustersRequest(axis="full"), budget_s=120)
    assert fresh.clustering_id != found.clustering_id
    assert fresh.experience_count == len(SAMPLES) + 1

    # An unrelated value is refused by the worker and never stored.
    value = StoreValueRequest(
        id=str(uuid.uuid4()),
        text="Water the office plants twice a week.",
        axis="full",
        label=0,
        created_at=datetime.now(UTC),
    )
    with pytest.raises(ValidationError, match="Value not stored"):
        await arq_jobs.run(STORE_VALUE, value, budget_s=60)
    assert (await arq_jobs.run(LIST_VALUES, ListValuesRequest(), budget_s=60)).count == 0
