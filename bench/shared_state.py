"""What sharing the code index through Redis costs (``LMS_SHARED_STATE=redis``).

Corpus: the ``networkx`` and ``pip`` packages as installed (as ``bench code``), keyword side only
(``LMS_CODE_VECTORS=false``: the vectors are the Qdrant server's business, not measured here).
In this process, on the real Redis, three workers' services with data folders of their own:
``local`` indexes and searches alone; ``first`` indexes with shared state (its record written to
Redis beside its rows); ``second`` never indexed, so its first search rebuilds its replica from
the record. Then one file is edited and indexed again on ``first``, and ``second``'s next search
catches up with that one change. Searches are ``search_code`` jobs run in-process on each worker's services.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench.code import CORPUS, QUERIES, copy_corpus
from bench.common import latency_summary_ms, print_table, progress
from learning_memory.shared.contracts.code import IndexCodebaseRequest, SearchCodeRequest
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import load_settings
from learning_memory.worker.jobs.code import index_codebase, search_code
from learning_memory.worker.services import JobRun, WorkerServices

PROJECT = "corpus"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--searches", type=int, default=200, help="timed searches per worker (200)")


@contextlib.asynccontextmanager
async def _worker(root: Path, shared: bool, redis: Redis, namespace: str) -> AsyncIterator[JobRun]:
    settings = load_settings(
        queue="inline",
        data_dir=root / "data",
        journal_dir=root / "journal",
        embedding_model="hashing:64",
        code_vectors=False,
        shared_state="redis" if shared else "local",
        namespace=namespace,
    )
    services = WorkerServices(settings)
    services.connect(redis, Keys(namespace))
    try:
        yield JobRun(services=services, job_id="bench", job_try=1)
    finally:
        await services.close()


async def _timed(call: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await call
    return result, time.perf_counter() - started


async def _search(job_run: JobRun, query: str) -> float:
    _, seconds = await _timed(search_code(job_run, SearchCodeRequest(query=query, project=PROJECT, limit=10)))
    return seconds


async def run(args: argparse.Namespace) -> dict[str, Any]:
    namespace = f"bench-shared-{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(args.redis_url)
    keys = Keys(namespace)
    try:
        with tempfile.TemporaryDirectory(prefix="lms-bench-shared-") as tmp:
            root = Path(tmp)
            corpus = root / "corpus"
            files = copy_corpus(CORPUS, corpus)
            request = IndexCodebaseRequest(directory=str(corpus), project=PROJECT)
            async with (
                _worker(root / "local", False, redis, namespace) as local,
                _worker(root / "first", True, redis, namespace) as first,
                _worker(root / "second", True, redis, namespace) as second,
            ):
                progress(f"indexing {files} files alone, then with shared state")
                alone, alone_s = await _timed(index_codebase(local, request))
                _, shared_s = await _timed(index_codebase(first, request))
                units = alone.units_indexed
                record_bytes = int(await redis.memory_usage(keys.code_files(PROJECT), samples=0) or 0)
                progress("the second worker's first search (its replica built from the record)")
                rebuild_s = await _search(second, QUERIES[0])
                progress(f"{args.searches} searches on each worker")
                timings: dict[str, list[float]] = {"local": [], "shared": []}
                for n in range(args.searches):
                    query = QUERIES[n % len(QUERIES)]
                    timings["local"].append(await _search(local, query))
                    timings["shared"].append(await _search(second, query))
                edited = next(corpus.rglob("*.py"))
                edited.write_text(edited.read_text() + "\n\ndef added_for_the_benchmark():\n    return 1\n")
                _, edit_s = await _timed(index_codebase(first, request))
                after_edit_s = await _search(second, QUERIES[1])
    finally:
        stale = [key async for key in redis.scan_iter(match=f"{namespace}:*", count=500)]
        if stale:
            await redis.delete(*stale)
        await redis.aclose()

    local_lat = latency_summary_ms(timings["local"])
    shared_lat = latency_summary_ms(timings["shared"])
    rows = [
        ["cold index, alone (s)", f"{alone_s:.2f}"],
        ["cold index, shared state (s)", f"{shared_s:.2f}", f"{(shared_s / alone_s - 1) * 100:+.0f} %"],
        ["record in Redis (MiB)", f"{record_bytes / 2**20:.1f}", f"{record_bytes / units:.0f} B/unit"],
        [
            "second worker's first search, building its replica (s)",
            f"{rebuild_s:.2f}",
            f"{units / rebuild_s:,.0f} units/s",
        ],
        ["search_code p50 / p95, alone (ms)", f"{local_lat['p50_ms']:.1f} / {local_lat['p95_ms']:.1f}"],
        ["search_code p50 / p95, shared (ms)", f"{shared_lat['p50_ms']:.1f} / {shared_lat['p95_ms']:.1f}"],
        ["one file edited: index on the first (s)", f"{edit_s:.2f}"],
        ["then the second's next search, catching up (s)", f"{after_edit_s:.2f}"],
    ]
    print_table(["measure", "value", ""], [row + [""] * (3 - len(row)) for row in rows])
    return {
        "files": files,
        "units": units,
        "cold_index_alone_s": alone_s,
        "cold_index_shared_s": shared_s,
        "record_bytes": record_bytes,
        "first_search_building_replica_s": rebuild_s,
        "search_alone": local_lat,
        "search_shared": shared_lat,
        "edit_index_s": edit_s,
        "search_catching_up_after_edit_s": after_edit_s,
    }
