"""Seeding one data folder through the real paths: experiences through the worker's persist job
(a share of them auto experiences, as capture produces them), memories through ``store_memory``,
code units by indexing installed packages until enough units are stored."""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from pathlib import Path
from typing import Any

from mcp import Client

from bench.code import call_tool, index_project
from bench.common import progress
from bench.learning import entry_of
from learning_memory.cli.samples import SampleEntry
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.experiences import (
    PERSIST_EXPERIENCE,
    Anchor,
    GhapEntry,
    PersistExperienceRequest,
)

IN_FLIGHT = 8  # persist jobs (or store_memory calls) at a time
AUTO_SHARE = 0.7  # capture grows the store far faster than manual GHAP: most are auto
# Packages of the venv indexed in turn until --code-units units are stored, largest last.
PACKAGES = ("networkx", "pip", "mypy", "setuptools", "hypothesis", "sympy", "scipy", "sklearn", "torch")
FILES = ("src/app/loader.py", "src/app/partners.py", "tests/test_loader.py", "src/etl/nightly.py")


def _auto(entry: GhapEntry, number: int) -> GhapEntry:
    resolution = entry.resolution
    if resolution is not None:
        resolution = resolution.model_copy(update={"confidence_tier": "auto"})
    anchor = Anchor(file=FILES[number % len(FILES)], symbol=f"step_{number % 97}")
    return entry.model_copy(update={"source": "auto", "anchors": [anchor], "resolution": resolution})


def experience(samples: list[SampleEntry], number: int) -> GhapEntry:
    entry = entry_of(samples[number % len(samples)], number)
    return _auto(entry, number) if (number * 7919) % 100 < AUTO_SHARE * 100 else entry


async def seed_experiences(jobs: ArqTransport, samples: list[SampleEntry], numbers: range) -> float:
    pending = iter(numbers)
    started = time.perf_counter()

    async def lane() -> None:
        for number in pending:
            request = PersistExperienceRequest(entry=experience(samples, number))
            await jobs.run(PERSIST_EXPERIENCE, request, budget_s=300)
            if (number + 1) % 1000 == 0:
                progress(f"scale: {number + 1} experiences stored")

    await asyncio.gather(*(lane() for _ in range(IN_FLIGHT)))
    return time.perf_counter() - started


async def seed_memories(client: Client, count: int) -> float:
    from bench.memory import _memory

    rng = random.Random(3)
    pending = iter(range(count))
    started = time.perf_counter()

    async def lane() -> None:
        for n in pending:
            await call_tool(client, "store_memory", _memory(rng, n))
            if (n + 1) % 1000 == 0:
                progress(f"scale: {n + 1} memories stored")

    await asyncio.gather(*(lane() for _ in range(IN_FLIGHT)))
    return time.perf_counter() - started


def _site_packages() -> Path:
    import mcp  # installed with the project, so its folder is the venv's site-packages

    return Path(mcp.__file__).resolve().parent.parent


async def seed_code(client: Client, target: int, corpus: Path) -> dict[str, Any]:
    """Index packages one project each until ``target`` units are stored; small targets take a
    slice of the first package's files so the smoke test stays quick."""
    source, units, indexed = _site_packages(), 0, []
    started = time.perf_counter()
    for name in PACKAGES:
        if units >= target or not (source / name).is_dir():
            continue
        files = sorted((source / name).rglob("*.py"))
        if target - units < 5000:  # roughly ten units a file: take about as many files as needed
            files = files[: max(5, (target - units) // 10)]
        for file in files:
            copy = corpus / name / file.relative_to(source / name)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, copy)
        _, seconds = await index_project(client, corpus / name, name)
        listed = (await call_tool(client, "list_indexed_projects", {}))["projects"]
        units = sum(int(p["units"]) for p in listed)
        indexed.append({"package": name, "files": len(files), "seconds": seconds})
        progress(f"scale: indexed {name} ({len(files)} files, {seconds:.0f} s), {units} units in all")
    return {"units": units, "packages": indexed, "seconds": time.perf_counter() - started}
