"""Learning tools through a real MCP client over stdio, arq mode, a real worker; cluster quality.

For each size (1,000 and 5,000 experiences from the bundled sample themes, persisted through the
worker's own job), times ``get_clusters`` cold (a new experience arrived just before each call,
so the axis is clustered again) and cached, then the other four tools, one call at a time.
Quality: the same texts embedded with the same model in this process and clustered with and
without PCA, scored by the adjusted Rand index against the themes they were made from.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import BenchError, print_table, progress, report_tool_targets
from bench.processes import serving
from learning_memory.cli.client import result_payload
from learning_memory.cli.samples import SampleEntry, generated_entries
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.experiences import (
    PERSIST_EXPERIENCE,
    GhapEntry,
    PersistExperienceRequest,
)
from learning_memory.shared.settings import Settings, load_settings

# p95 targets of the issue, and the seed's own in brackets.
TARGETS_P95_MS = {
    "get_clusters (cold)": (500, 2000),
    "get_clusters (cached)": (20, 2000),
    "get_cluster_members": (50, 300),
    "validate_value": (60, 500),
    "store_value": (100, 500),
    "list_values": (20, 100),
}
IN_FLIGHT = 8  # persist jobs at a time while loading


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes", default="1000,5000", help="experiences per step, comma-separated (1000,5000)"
    )
    parser.add_argument("--calls", type=int, default=100, help="timed calls per tool and size (100)")
    parser.add_argument("--cold", type=int, default=10, help="cold get_clusters calls per size (10)")
    parser.add_argument(
        "--dims", default="0,8,16,32,64", help="PCA dimensions compared for quality (0 = none)"
    )
    parser.add_argument("--quality-only", action="store_true", help="only the quality comparison (no server)")


def entry_of(sample: SampleEntry, number: int) -> GhapEntry:
    """A resolved GHAP entry as the journal would hand it to the persist job."""
    return sample.resolved_entry(
        f"ghap_bench{number:08d}", "bench", datetime_at(number), orphaned=number % 10 == 0
    )


def datetime_at(number: int) -> datetime:
    return datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=number)


async def _persist(jobs: ArqTransport, samples: list[SampleEntry], numbers: range) -> None:
    pending = iter(numbers)

    async def lane() -> None:
        for number in pending:
            request = PersistExperienceRequest(entry=entry_of(samples[number], number))
            await jobs.run(PERSIST_EXPERIENCE, request, budget_s=300)

    await asyncio.gather(*(lane() for _ in range(IN_FLIGHT)))


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def _timed(
    client: Any, samples: dict[str, list[float]], name: str, tool: str, arguments: dict[str, Any]
) -> Any:
    started = time.perf_counter()
    answer = await _call(client, tool, arguments)
    samples.setdefault(name, []).append(time.perf_counter() - started)
    return answer


def _story(member: dict[str, Any], i: int) -> str:
    # A cluster's most typical story, numbered so that no text is served from the embedding cache.
    parts = ("goal", "hypothesis", "action", "prediction")
    text = "\n".join(f"{part.capitalize()}: {member[part]}" for part in parts)
    return f"{text[:480]} (retro {i})"


async def _measure(
    client: Any, jobs: ArqTransport, samples: list[SampleEntry], loaded: int, args: argparse.Namespace
) -> tuple[dict[str, list[float]], int, dict[str, Any]]:
    times: dict[str, list[float]] = {}
    for _ in range(args.cold):
        await _persist(jobs, samples, range(loaded, loaded + 1))  # the axis changed: next call clusters
        loaded += 1
        found = await _timed(client, times, "get_clusters (cold)", "get_clusters", {"axis": "full"})
    for _ in range(args.calls):
        await _timed(client, times, "get_clusters (cached)", "get_clusters", {"axis": "full"})
    clusters = [c["cluster_id"] for c in found["clusters"]] or ["cluster_full_0"]
    typical: dict[str, dict[str, Any]] = {}
    for i in range(args.calls):
        cid = clusters[i % len(clusters)]
        members = await _timed(
            client, times, "get_cluster_members", "get_cluster_members", {"cluster_id": cid}
        )
        typical.setdefault(cid, members["members"][0])
    passing: list[str] = []
    for i in range(args.calls):
        cid = clusters[i % len(clusters)]
        arguments = {"text": _story(typical[cid], i), "cluster_id": cid}
        verdict = await _timed(client, times, "validate_value", "validate_value", arguments)
        if verdict["valid"] and cid not in passing:
            passing.append(cid)
    if not passing:
        raise BenchError("no cluster's typical story validated: nothing to time store_value with")
    for i in range(args.calls):
        cid = passing[i % len(passing)]
        arguments = {"text": _story(typical[cid], args.calls + i), "cluster_id": cid, "axis": "full"}
        await _timed(client, times, "store_value", "store_value", arguments)
    for i in range(args.calls):
        await _timed(
            client, times, "list_values", "list_values", {"limit": 20} | ({"axis": "full"} if i % 2 else {})
        )
    facts = {
        "clusters": found["count"],
        "noise": found["noise_count"],
        "experiences_clustered": found["experience_count"],
        "clusters_whose_typical_story_validates": f"{len(passing)}/{len(clusters)}",
    }
    return times, loaded, facts


async def _tools(
    args: argparse.Namespace, tmp: Path, sizes: list[int], samples: list[SampleEntry]
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with serving(args.redis_url, tmp) as (client, worker):
        settings: Settings = load_settings(
            redis_url=worker.env["LMS_REDIS_URL"], namespace=worker.env["LMS_NAMESPACE"], queue="arq"
        )
        jobs = ArqTransport(settings)
        try:
            await _call(client, "search_experiences", {"query": "warm-up"})  # the model is loaded
            loaded = 0
            for size in sizes:
                started = time.perf_counter()
                await _persist(jobs, samples, range(loaded, size))
                load_s = time.perf_counter() - started
                progress(f"learning: {size} experiences stored ({(size - loaded) / load_s:.0f}/s)")
                times, loaded, facts = await _measure(client, jobs, samples, size, args)
                print(f"\n{size:,} experiences: {facts}")
                # The issue sets the cold target at 1,000 experiences; past that, the seed's 2 s.
                targets = (
                    TARGETS_P95_MS
                    if size <= 1000
                    else {**TARGETS_P95_MS, "get_clusters (cold)": (2000, 2000)}
                )
                summaries, verdicts = report_tool_targets(times, targets)
                results[str(size)] = {"tools": summaries, "pass": verdicts, "load_seconds": load_s, **facts}
        finally:
            await jobs.close()
    return results


async def _quality(
    sizes: list[int], dims: list[int], samples: list[SampleEntry], tmp: Path
) -> dict[str, Any]:
    """ARI against the themes, and hdbscan's time, with and without PCA, on the real embeddings."""
    from sklearn.metrics import adjusted_rand_score

    from learning_memory.worker.embedding.factory import open_embedder
    from learning_memory.worker.jobs.experiences import axis_texts
    from learning_memory.worker.learning.clusterer import cluster_labels, normalise
    from learning_memory.worker.metadata.store import MetadataStore

    settings = load_settings(data_dir=tmp / "quality", log_level="WARNING")
    metadata = await MetadataStore.open(tmp / "quality" / "metadata.sqlite3")
    try:
        embedder = await open_embedder(settings, metadata)
        count = max(sizes)
        texts = []
        for number in range(count):
            entry = entry_of(samples[number], number)
            assert entry.resolution is not None
            texts.append(axis_texts(entry, entry.resolution)["full"])
        progress(f"learning: embedding {count} texts for the quality comparison")
        vectors = normalise(np.asarray(await embedder.embed(texts)))
    finally:
        await metadata.close()
    rows, found = [], {}
    for size in sizes:
        truth = [samples[n].theme for n in range(size)]
        base: Any = None
        for d in dims:
            started = time.perf_counter()
            labels = await asyncio.to_thread(cluster_labels, vectors[:size], 5, 3, d)
            seconds = time.perf_counter() - started
            base = labels if base is None else base
            ari = float(adjusted_rand_score(truth, labels))
            agree = float(adjusted_rand_score(base, labels))
            clusters, noise = int(labels.max() + 1), int(np.sum(labels < 0))
            found[f"{size}/{d or 'none'}"] = {
                "ari_vs_themes": ari,
                "ari_vs_unreduced": agree,
                "clusters": clusters,
                "noise": noise,
                "seconds": seconds,
            }
            rows.append(
                [
                    f"{size:,}",
                    str(d or "none (384)"),
                    f"{ari:.3f}",
                    f"{agree:.3f}",
                    str(clusters),
                    str(noise),
                    f"{seconds:.2f}",
                ]
            )
    themes = len({s.theme for s in samples})
    print(f"\ncluster quality ({themes} known themes, min_cluster_size 5, min_samples 3):")
    print_table(
        ["experiences", "PCA dims", "ARI vs themes", "ARI vs 384-d", "clusters", "noise", "hdbscan s"], rows
    )
    return found


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sorted(int(size) for size in args.sizes.split(","))
    dims = [int(d) for d in args.dims.split(",")]
    # Enough for every size plus the cold calls' new experiences.
    samples = generated_entries(max(sizes) + args.cold * len(sizes) + 10, seed=11)
    rng = random.Random(5)
    rng.shuffle(samples)  # themes in no particular order, as experiences arrive
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-learning-"))
    try:
        tools = {} if args.quality_only else await _tools(args, tmp, sizes, samples)
        quality = await _quality(sizes, dims, samples, tmp)
        return {
            "parameters": {"sizes": sizes, "calls": args.calls, "cold": args.cold, "dims": dims},
            "tools": tools,
            "quality": quality,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
