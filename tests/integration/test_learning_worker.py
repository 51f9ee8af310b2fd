"""The learning jobs through Redis and a real worker process with the real model: the sample
themes come back as clusters, the clustering is cached, and a new experience persisted by the
worker makes the next call cluster again."""

from __future__ import annotations

import subprocess
import uuid
from datetime import UTC, datetime

import pytest
from sklearn.metrics import adjusted_rand_score

from server.cli.samples import demo_entries
from server.jobclient import run_job
from server.jobclient.arq_client import ArqJobClient
from shared.contracts.experiences import PERSIST_EXPERIENCE, PersistExperienceRequest
from shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    LIST_VALUES,
    STORE_VALUE,
    GetClusterMembersRequest,
    GetClustersRequest,
    ListValuesRequest,
    StoreValueRequest,
)
from shared.errors import ValidationError
from tests.learning_data import ghap_entry

pytestmark = [pytest.mark.slow, pytest.mark.redis]
SAMPLES = demo_entries()


async def persist(jobs: ArqJobClient, numbers: range) -> None:
    for number in numbers:
        entry = ghap_entry(SAMPLES[number % len(SAMPLES)], number)
        await run_job(jobs, PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry), timeout_s=120)


async def test_clusters_from_a_real_worker(
    live_worker: subprocess.Popen[bytes], arq_jobs: ArqJobClient
) -> None:
    await persist(arq_jobs, range(len(SAMPLES)))
    found = await run_job(arq_jobs, GET_CLUSTERS, GetClustersRequest(axis="full"), timeout_s=120)
    assert found.experience_count == len(SAMPLES) and found.count >= 6

    # Every cluster is mostly one theme: the real model separates the sample themes.
    themes = {ghap_entry(sample, n).id: sample.theme for n, sample in enumerate(SAMPLES)}
    truth, labels = [], []
    for cluster in found.clusters:
        request = GetClusterMembersRequest(axis="full", label=cluster.label, limit=100)
        members = await run_job(arq_jobs, GET_CLUSTER_MEMBERS, request, timeout_s=60)
        assert members.size == cluster.size == members.count
        truth += [themes[m.ghap_id] for m in members.members]
        labels += [cluster.label] * members.count
    assert adjusted_rand_score(truth, labels) > 0.9

    # Cached: the same clustering until the axis changes; then a new one with the new point.
    again = await run_job(arq_jobs, GET_CLUSTERS, GetClustersRequest(axis="full"), timeout_s=60)
    assert again == found
    await persist(arq_jobs, range(len(SAMPLES), len(SAMPLES) + 1))
    fresh = await run_job(arq_jobs, GET_CLUSTERS, GetClustersRequest(axis="full"), timeout_s=120)
    assert fresh.clustering_id != found.clustering_id
    assert fresh.experience_count == len(SAMPLES) + 1

    # An unrelated value is refused by the worker and never stored.
    request = StoreValueRequest(
        id=str(uuid.uuid4()),
        text="Water the office plants twice a week.",
        axis="full",
        label=0,
        created_at=datetime.now(UTC),
    )
    with pytest.raises(ValidationError, match="Value not stored"):
        await run_job(arq_jobs, STORE_VALUE, request, timeout_s=60)
    assert (await run_job(arq_jobs, LIST_VALUES, ListValuesRequest(), timeout_s=60)).count == 0
