"""The git tools as Claude Code sees them: stdio, arq mode, a real worker.

The real model searches the test repository; the hashing embedder stands in where the test is
about concurrency on a long generated history rather than about the model.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.git_repo import RETRY_MESSAGE, build_repo
from tests.helpers import wait_for
from tests.support.git_history import generate

pytestmark = pytest.mark.slow


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


async def _result(client: Client, job_id: str) -> dict[str, Any]:
    async def finished() -> dict[str, Any] | None:
        status = await _ok(client, "get_job_status", job_id=job_id)
        assert status["state"] != "failed", status
        return status["result"] if status["state"] == "complete" else None

    return await wait_for(finished, timeout=300, what=f"job {job_id}", interval=0.1)


async def test_git_tools_with_the_real_model(lms_env: dict[str, str], redis: Redis, tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "repo")
    lms_env["LMS_REPO_PATH"] = str(repo)
    async with stdio_client(lms_env) as client:
        found = await _ok(client, "search_commits", query="how do we retry failed HTTP requests?", limit=3)
        assert found["results"][0]["message"] == RETRY_MESSAGE
        hot = await _ok(client, "get_churn_hotspots", days=90, limit=1)
        assert hot["results"][0]["file_path"] == "src/main.py"
        history = await _ok(client, "get_file_history", path="src/main.py")
        assert history["results"][-1]["path"] == "src/app.py"  # followed across the rename
        authors = await _ok(client, "get_code_authors", path="src/main.py")
        assert {row["author"] for row in authors["results"]} >= {"Alice Liddell", "Bob Builder"}
        missing = await client.call_tool("get_code_authors", {"path": "../elsewhere.py"})
        assert missing.is_error and "validation_error" in missing.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def long_history(tmp_path: Path) -> tuple[Path, int]:
    repo = generate(tmp_path / "long", 3000)
    count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, check=True)
    return repo, int(count.stdout)


async def test_search_and_churn_while_index_commits_runs(
    lms_env: dict[str, str],
    redis: Redis,
    namespace: str,
    worker_factory: WorkerFactory,
    long_history: tuple[Path, int],
) -> None:
    repo, head_count = long_history
    lms_env.update(
        LMS_REPO_PATH=str(repo),
        LMS_EMBEDDING_MODEL="hashing:256",
        LMS_AUTOSTART_WORKER="false",
        # Short: on a fast, quiet machine the whole cold index took less than two 0.3 s waits.
        LMS_TOOL_WAIT_S="0.05",
    )
    worker = worker_factory()
    await wait_for_worker(redis, namespace, worker.pid)
    async with stdio_client(lms_env) as client:
        running = await _ok(client, "index_commits")
        assert running["status"] == "running"
        joined = await _ok(client, "index_commits")
        assert joined["job_id"] == running["job_id"]  # the same repository is joined, not indexed twice
        search = await _ok(client, "search_commits", query="race condition in the cache", limit=50)
        # Churn reads history, not the index: it answers while the index job runs.
        churn = await _ok(client, "get_churn_hotspots", days=90, limit=5)
        if churn.get("status") == "running":  # it can outlast the short wait budget
            churn = await _result(client, churn["job_id"])
        assert len(churn["results"]) == 5 and churn["results"][0]["change_count"] > 0
        indexed = await _result(client, running["job_id"])
        assert indexed["reason"] == "cold" and indexed["commits_total"] == head_count
        # The search waited for the index (never stale) or found it finished: complete either way.
        found = await _result(client, search["job_id"]) if search.get("status") == "running" else search
        shas = [hit["sha"] for hit in found["results"]]
        assert len(shas) == len(set(shas)) == 50
        again = await _ok(client, "index_commits")
        if again.get("status") == "running":
            again = await _result(client, again["job_id"])
        assert again["reason"] == "up_to_date" and again["commits_total"] == head_count
