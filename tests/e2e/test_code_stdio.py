"""Code indexing as Claude Code sees it: stdio, arq mode, a real worker.

The real model indexes a small project; the hashing embedder stands in where a test is about
the pipeline rather than the model (a long index job, a worker killed mid-index).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.helpers import log_events, start_worker, stop_process, wait_for

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "code"


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


def _big_project(root: Path, files: int) -> Path:
    """Many small Python files: an index job that takes a while."""
    root.mkdir()
    for n in range(files):
        body = "\n".join(f"def handler_{n}_{k}(request):\n    return request.get('{k}')\n" for k in range(8))
        (root / f"module_{n}.py").write_text(body)
    return root


async def _index_and_wait(client: Client, directory: Path, project: str) -> dict[str, Any]:
    answer = await _ok(client, "index_codebase", directory=str(directory), project=project)
    if answer.get("status") != "running":
        return dict(answer)

    async def finished() -> dict[str, Any] | None:
        status = await _ok(client, "get_job_status", job_id=answer["job_id"])
        return status["result"] if status["state"] == "complete" else None

    return await wait_for(finished, timeout=240, what=f"indexing {project}", interval=0.25)


async def _complete(client: Client, project: str) -> dict[str, Any]:
    """The project's entry in list_indexed_projects once every unit has its vector."""

    async def complete() -> dict[str, Any] | None:
        answer = await _ok(client, "list_indexed_projects")
        if "projects" not in answer:  # past a short LMS_TOOL_WAIT_S on a busy worker: ask again
            return None
        entry = next((p for p in answer["projects"] if p["project"] == project), None)
        return entry if entry is not None and entry["vectors_pending"] == 0 else None

    return await wait_for(complete, timeout=240, what=f"{project}'s vectors", interval=0.1)


async def test_index_then_search_every_language_fixture(
    lms_env: dict[str, str], redis: Redis, tmp_path: Path
) -> None:
    project = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, project)
    async with stdio_client(lms_env) as client:
        stats = await _ok(client, "index_codebase", directory=str(project), project="fixtures")
        sources = [path for path in FIXTURES.iterdir() if path.suffix != ".json"]
        assert stats["files_indexed"] == len(sources) and stats["errors"] == []
        await _complete(client, "fixtures")
        languages = {
            hit["language"] for hit in (await _ok(client, "search_code", query="user", limit=50))["results"]
        }
        assert len(languages) >= 5
        rust = await _ok(client, "search_code", query="a function", language="rust", project="fixtures")
        assert rust["count"] > 0 and {hit["language"] for hit in rust["results"]} == {"rust"}


async def test_search_answers_while_a_long_index_runs(
    lms_env: dict[str, str], redis: Redis, namespace: str, tmp_path: Path, worker_factory: WorkerFactory
) -> None:
    lms_env.update(LMS_EMBEDDING_MODEL="hashing:256", LMS_AUTOSTART_WORKER="false", LMS_TOOL_WAIT_S="0.5")
    worker = worker_factory()
    await wait_for_worker(redis, namespace, worker.pid)
    small = tmp_path / "small"
    small.mkdir()
    (small / "retry.py").write_text("def calculate_retry_delay(attempt):\n    return 2 ** attempt\n")
    # Big enough to outlast both calls' waits on a fast, quiet machine (400 files did not).
    big = _big_project(tmp_path / "big", 3000)
    async with stdio_client(lms_env) as client:
        await _ok(client, "index_codebase", directory=str(small), project="small")
        running = await _ok(client, "index_codebase", directory=str(big), project="big")
        assert running["status"] == "running"
        joined = await _ok(client, "index_codebase", directory=str(big), project="big")
        assert joined["job_id"] == running["job_id"]  # the same project is joined, not indexed twice
        found = await _ok(client, "search_code", query="calculate retry delay", project="small")
        assert found["results"][0]["name"] == "calculate_retry_delay"
        status = await _ok(client, "get_job_status", job_id=running["job_id"])
        assert status["state"] in ("queued", "in_progress")  # the search did not wait for the index

        async def finished() -> dict[str, Any] | None:
            now = await _ok(client, "get_job_status", job_id=running["job_id"])
            return now if now["state"] == "complete" else None

        done = await wait_for(finished, timeout=240, what="the big index", interval=0.25)
        assert done["result"]["files_indexed"] == 3000 and done["result"]["units_indexed"] == 24000


async def test_worker_killed_mid_index_leaves_a_complete_index(
    lms_env: dict[str, str], redis: Redis, namespace: str, tmp_path: Path, worker_factory: WorkerFactory
) -> None:
    lms_env.update(LMS_EMBEDDING_MODEL="hashing:256", LMS_AUTOSTART_WORKER="false", LMS_TOOL_WAIT_S="0.5")
    first = worker_factory()
    await wait_for_worker(redis, namespace, first.pid)
    big = _big_project(tmp_path / "big", 1500)
    async with stdio_client(lms_env) as client:
        running = await _ok(client, "index_codebase", directory=str(big), project="big")

        async def some_progress() -> bool:
            status = await _ok(client, "get_job_status", job_id=running["job_id"])
            progress = status.get("progress") or {}
            return bool(status["state"] == "in_progress" and progress.get("current", 0) > 0)

        await wait_for(some_progress, timeout=120, what="indexing to be under way", interval=0.05)
        first.kill()
        await asyncio.to_thread(first.wait, 10)
        worker_factory()  # the job is reclaimed and run again

        async def finished() -> bool:
            status = await _ok(client, "get_job_status", job_id=running["job_id"])
            return bool(status["state"] == "complete")

        await wait_for(finished, timeout=240, what="the retried index", interval=0.25)
        # Complete, no duplicates, and every unit's vector written (the new worker filled them).
        entry = await _complete(client, "big")
        assert {key: entry[key] for key in ("project", "units", "vectors_pending")} == {
            "project": "big",
            "units": 12000,
            "vectors_pending": 0,
        }
        assert entry["last_indexed_at"]
        with closing(sqlite3.connect(Path(lms_env["LMS_DATA_DIR"]) / "metadata.sqlite3")) as db:
            rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT point_id) FROM code_lexical").fetchone()
        assert rows == (12000, 12000)
        again = await _index_and_wait(client, big, "big")
        assert again["files_indexed"] == 0 and again["files_unchanged"] == 1500


async def test_a_second_worker_answers_for_a_project_the_first_indexed(
    lms_env: dict[str, str], redis: Redis, namespace: str, tmp_path: Path
) -> None:
    # Two worker processes with data folders of their own, as on two machines, sharing state
    # through Redis: the second answers searches on the project the first indexed, finds every
    # file unchanged when asked to index it again, and fills its vectors without its model.
    lms_env.update(
        LMS_EMBEDDING_MODEL="hashing:256",
        LMS_AUTOSTART_WORKER="false",
        LMS_SHARED_STATE="redis",
        LMS_LOG_LEVEL="DEBUG",
    )
    project = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, project)
    sources = len([path for path in FIXTURES.iterdir() if path.suffix != ".json"])
    computed: dict[str, int] = {}
    async with stdio_client(lms_env) as client:
        for name in ("first", "second"):
            env = {**lms_env, "LMS_DATA_DIR": str(tmp_path / name)}
            log_path = tmp_path / f"{name}.log"
            worker = start_worker(env, log_path)
            try:
                await wait_for_worker(redis, namespace, worker.pid)
                if name == "second":
                    found = await _ok(client, "search_code", query="user", project="fixtures", limit=50)
                    assert len({hit["language"] for hit in found["results"]}) >= 5
                stats = await _index_and_wait(client, project, "fixtures")
                expected = (sources, 0) if name == "first" else (0, sources)
                assert (stats["files_indexed"], stats["files_unchanged"]) == expected
                entry = await _complete(client, "fixtures")
            finally:
                stop_process(worker)
            computed[name] = sum(int(e["texts"]) for e in log_events(log_path, "embedding.computed"))
    assert computed["first"] >= entry["units"] > 0
    assert computed["second"] == 0
