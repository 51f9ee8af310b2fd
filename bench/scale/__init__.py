"""``python -m bench scale``: every hook, ``start_ghap`` and ``get_clusters`` with one data folder
grown as capture grows it (20,000 experiences, 10,000 memories, 50,000 code units by default).

Arq mode, a real worker, the real default model. Seeding goes through the real paths (the
worker's persist job, ``store_memory``, ``index_codebase`` of installed packages) and each step's
seconds are reported; then, warm, through a real MCP client over stdio: each hook tool the plugin
uses, ``start_ghap`` (with its premortem warnings) and ``get_clusters`` per axis cold and cached;
the worker's peak RSS over the whole run and the store's size on disk.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import print_table, progress
from bench.processes import serving
from bench.scale.memory import watching
from bench.scale.seed import seed_code, seed_experiences, seed_memories
from bench.scale.timing import time_clusters, time_ghap, time_hooks, time_search, verdicts
from learning_memory.cli.samples import generated_entries
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.settings import load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--experiences", type=int, default=20_000, help="experiences seeded (20000)")
    parser.add_argument("--memories", type=int, default=10_000, help="memories seeded (10000)")
    parser.add_argument("--code-units", type=int, default=50_000, help="code units indexed (50000)")
    parser.add_argument("--calls", type=int, default=40, help="timed calls per hook and tool (40)")
    parser.add_argument("--cold", type=int, default=2, help="cold get_clusters calls per axis (2)")


def _size_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    samples = generated_entries(min(args.experiences, 5000) + 10, seed=11)
    random.Random(5).shuffle(samples)
    (tmp / "corpus").mkdir()
    async with serving(args.redis_url, tmp) as (client, worker):
        settings = load_settings(
            redis_url=worker.env["LMS_REDIS_URL"], namespace=worker.env["LMS_NAMESPACE"], queue="arq"
        )
        jobs = ArqTransport(settings)
        try:
            async with watching(worker.pid) as memory:
                seeding: dict[str, Any] = {}
                seeding["experiences_s"] = await seed_experiences(jobs, samples, range(args.experiences))
                memory.after("experiences")
                seeding["memories_s"] = await seed_memories(client, args.memories)
                memory.after("memories")
                seeding["code"] = await seed_code(client, args.code_units, tmp / "corpus")
                memory.after("code")
                progress(f"scale: seeded {seeding}")
                times: dict[str, list[float]] = {}
                times |= await time_hooks(client, tmp / "corpus", args.calls)
                times |= await time_ghap(client, args.calls)
                times |= await time_search(client, args.calls)
                memory.after("hooks, start_ghap and searches")
                times |= await time_clusters(client, jobs, samples, args.experiences, args.cold)
                memory.after("get_clusters")
                worker_memory = memory.summary()
        finally:
            await jobs.close()
    store = _size_mib(tmp / "data")
    return {"seeding": seeding, "times": times, "worker_memory": worker_memory, "store_mib": store}


def _report(args: argparse.Namespace, measured: dict[str, Any]) -> dict[str, Any]:
    seeding = measured["seeding"]
    print(
        f"\nseeded: {args.experiences:,} experiences in {seeding['experiences_s']:.0f} s, "
        f"{args.memories:,} memories in {seeding['memories_s']:.0f} s, "
        f"{seeding['code']['units']:,} code units in {seeding['code']['seconds']:.0f} s; "
        f"store on disk {measured['store_mib']:.0f} MiB"
    )
    rows, summaries, passed = verdicts(measured["times"], measured["worker_memory"])
    print_table(["what", "p50", "p95 / figure", "target", ""], rows)
    return {"tools": summaries, "pass": passed}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-scale-"))
    started = time.perf_counter()
    try:
        measured = await _run_in(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = _report(args, measured)
    return {
        "parameters": {
            "experiences": args.experiences,
            "memories": args.memories,
            "code_units": args.code_units,
            "calls": args.calls,
            "cold": args.cold,
        },
        "seeding": measured["seeding"],
        "store_mib": measured["store_mib"],
        "worker_memory": measured["worker_memory"],
        "total_s": time.perf_counter() - started,
        **report,
    }
