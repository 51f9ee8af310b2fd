"""Experience versions shared through Redis: a persist by one worker makes every other worker's
cached clustering of that axis stale (real Redis, two workers' services in one process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis

from learning_memory.shared.contracts.experiences import PersistExperienceRequest
from learning_memory.shared.contracts.learning import GetClustersRequest
from learning_memory.shared.keys import Keys
from learning_memory.worker.jobs.experiences import persist_experience
from learning_memory.worker.jobs.learning import get_clusters
from tests.conftest import REDIS_URL
from tests.helpers import job_run
from tests.learning_data import ghap_entry
from tests.unit.test_learning_jobs import SAMPLES, persist_samples

pytestmark = pytest.mark.redis


async def test_a_persist_on_one_worker_makes_the_others_clustering_stale(
    namespace: str, redis: Redis, tmp_path: Path
) -> None:
    keys = Keys(namespace)
    other_client = Redis.from_url(REDIS_URL)  # as a second worker process has
    try:
        async with job_run(tmp_path / "a") as first, job_run(tmp_path / "b") as second:
            first.services.connect(redis, keys)
            second.services.connect(other_client, keys)
            await persist_samples(first, len(SAMPLES))
            assert await second.services.axis_versions.get("full") == len(SAMPLES)
            found = await get_clusters(first, GetClustersRequest(axis="full"))
            assert await get_clusters(first, GetClustersRequest(axis="full")) == found
            assert first.services.clusterings.computed == 1

            # The second worker stores one experience (in a store of its own here; on a shared
            # Qdrant server the first would also count it): the first clusters again.
            entry = ghap_entry(SAMPLES[0], 10_000)
            await persist_experience(second, PersistExperienceRequest(entry=entry))
            again = await get_clusters(first, GetClustersRequest(axis="full"))
            assert first.services.clusterings.computed == 2
            assert again.clustering_id != found.clustering_id
            # Nothing went to the local metadata store: the versions live in Redis only.
            local = await (await first.services.metadata()).fetchone(
                "SELECT count(*) AS n FROM axis_versions"
            )
            assert local is not None and local["n"] == 0
    finally:
        await other_client.aclose()
