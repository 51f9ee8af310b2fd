"""A code index and commit watermarks shared through Redis (real Redis; two workers' services in
one process, each with a data folder of its own, as on two machines): whichever worker indexed a
project, any worker searches it with every keyword row, indexes it (and a repository's commits)
again incrementally, and sees it deleted."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from learning_memory.shared.contracts.code import (
    DeleteProjectRequest,
    IndexCodebaseRequest,
    ListProjectsRequest,
    SearchCodeRequest,
)
from learning_memory.shared.contracts.git import IndexCommitsRequest
from learning_memory.shared.keys import Keys
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.jobs.code import (
    delete_project_index,
    index_codebase,
    list_indexed_projects,
    search_code,
)
from learning_memory.worker.jobs.git import index_commits
from learning_memory.worker.services import JobRun, WorkerServices
from tests.conftest import REDIS_URL
from tests.git_repo import commit, git, write
from tests.helpers import redis_answer
from tests.mcp_thread import inline_settings

pytestmark = pytest.mark.redis

RETRY = '''def calculate_retry_delay(attempt, retry_after=None):
    """Seconds to wait before the next attempt: exponential backoff with a cap."""
    return min(60, 2 ** attempt)
'''
CONFIG = '''def parse_config(path):
    """Read the settings file."""
    return open(path).read()
'''


@contextlib.asynccontextmanager
async def _worker(root: Path, namespace: str, redis: Redis) -> AsyncIterator[JobRun]:
    settings = inline_settings(root, "hashing:64", shared_state="redis", code_vectors=False)
    services = WorkerServices(settings)
    services.connect(redis, Keys(namespace))
    try:
        yield JobRun(services=services, job_id="test-job", job_try=1)
    finally:
        await services.close()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "retry.py").write_text(RETRY)
    (project / "config.py").write_text(CONFIG)
    return project


async def _paths(run: JobRun, query: str, project: str = "shop") -> list[str]:
    answer = await search_code(run, SearchCodeRequest(query=query, project=project, limit=5))
    return [hit.file_path for hit in answer.results]


async def test_any_worker_searches_indexes_and_deletes_what_another_indexed(
    namespace: str, redis: Redis, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    other_client = Redis.from_url(REDIS_URL)  # as a second worker process has
    try:
        async with (
            _worker(tmp_path / "a", namespace, redis) as first,
            _worker(tmp_path / "b", namespace, other_client) as second,
        ):
            indexed = await index_codebase(
                first, IndexCodebaseRequest(directory=str(project), project="shop")
            )
            assert indexed.files_indexed == 2

            # The second worker never indexed it: its keyword rows come from the shared record.
            assert (await _paths(second, "exponential backoff delay"))[0] == "retry.py"
            listed = await list_indexed_projects(second, ListProjectsRequest())
            assert [(p.project, p.units) for p in listed.projects] == [("shop", 2)]
            again = await index_codebase(second, IndexCodebaseRequest(directory=str(project), project="shop"))
            assert (again.files_indexed, again.files_unchanged) == (0, 2)

            # A change indexed by the second reaches the first's searches.
            (project / "config.py").write_text(CONFIG.replace("settings file", "yaml settings file"))
            (project / "retry.py").unlink()
            changed = await index_codebase(
                second, IndexCodebaseRequest(directory=str(project), project="shop")
            )
            assert (changed.files_indexed, changed.files_removed) == (1, 1)
            assert "retry.py" not in await _paths(first, "exponential backoff delay")
            assert (await _paths(first, "yaml settings"))[0] == "config.py"

            # Deleted on the first, gone on the second.
            await delete_project_index(first, DeleteProjectRequest(project="shop"))
            assert (await list_indexed_projects(second, ListProjectsRequest())).projects == []
            assert await _paths(second, "yaml settings") == []
    finally:
        await other_client.aclose()


async def test_a_worker_that_died_between_the_record_and_its_rows_catches_up(
    namespace: str, redis: Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The record is written before the worker's own rows: a worker that died in between finds its
    # replica behind the record on next use and applies what changed, rather than trusting its
    # own hashes (which would call the file unchanged and never write its rows).
    project = _project(tmp_path)
    request = IndexCodebaseRequest(directory=str(project), project="shop")
    async with _worker(tmp_path / "a", namespace, redis) as first:
        await index_codebase(first, request)
        (project / "retry.py").write_text(RETRY.replace("exponential backoff", "jittered backoff"))

        async def dies(*args: object) -> None:
            raise RuntimeError("killed between the record and the rows")

        with monkeypatch.context() as patch:
            patch.setattr(unit_store, "replace_files", dies)
            with pytest.raises(RuntimeError):
                await index_codebase(first, request)
        assert (await _paths(first, "jittered backoff"))[0] == "retry.py"
        again = await index_codebase(first, request)
        assert (again.files_indexed, again.files_unchanged) == (0, 2)


async def test_a_repository_indexed_by_one_worker_is_up_to_date_on_another(
    namespace: str, redis: Redis, tmp_path: Path
) -> None:
    # The commit watermark is shared: the second worker indexes only what came after.
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for n in range(3):
        write(repo, f"f{n}.py", f"x = {n}\n")
        commit(repo, f"change {n}", who="alice", days_ago=3 - n)
    other_client = Redis.from_url(REDIS_URL)
    try:
        async with (
            _worker(tmp_path / "a", namespace, redis) as first,
            _worker(tmp_path / "b", namespace, other_client) as second,
        ):
            cold = await index_commits(first, IndexCommitsRequest(repo_path=str(repo)))
            assert (cold.reason, cold.commits_indexed) == ("cold", 3)
            write(repo, "f3.py", "x = 3\n")
            commit(repo, "change 3", who="bob", days_ago=0)
            later = await index_commits(second, IndexCommitsRequest(repo_path=str(repo)))
            assert (later.reason, later.commits_indexed) == ("incremental", 1)
            assert (
                await index_commits(first, IndexCommitsRequest(repo_path=str(repo)))
            ).reason == "up_to_date"
            assert not await (await first.services.metadata()).fetchone("SELECT 1 FROM commit_watermarks")
    finally:
        await other_client.aclose()


async def test_a_replica_reads_only_what_changed_and_keeps_what_it_embedded(
    namespace: str, redis: Redis, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    other_client = Redis.from_url(REDIS_URL)
    try:
        async with (
            _worker(tmp_path / "a", namespace, redis) as first,
            _worker(tmp_path / "b", namespace, other_client) as second,
        ):
            request = IndexCodebaseRequest(directory=str(project), project="shop")
            await index_codebase(first, request)
            version = await redis_answer(redis.hget(Keys(namespace).code_meta("shop"), "version"))
            await index_codebase(first, request)  # nothing changed: no version for others to chase
            assert await redis_answer(redis.hget(Keys(namespace).code_meta("shop"), "version")) == version

            metadata = await first.services.metadata()
            await metadata.execute("UPDATE code_lexical SET embedded = 1")  # as its filler would
            (project / "config.py").write_text(CONFIG.replace("settings file", "yaml settings file"))
            await index_codebase(second, request)
            replica = first.services.code_replica
            assert replica is not None
            since = int(version or 0)
            changed = await replica.shared.changes("shop", since)  # what the first will read
            assert (changed.full, list(changed.files)) == (False, ["config.py"])
            assert (await replica.shared.changes("shop", 0)).full  # a new replica reads it all
            await first.services.current_code_index("shop")
            rows = await metadata.fetchall("SELECT file_path, embedded FROM code_lexical ORDER BY file_path")
            assert [(row["file_path"], row["embedded"]) for row in rows] == [
                ("config.py", 0),
                ("retry.py", 1),
            ]
    finally:
        await other_client.aclose()
