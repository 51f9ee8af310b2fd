"""``python -m bench porting``: export and import throughput on a populated store (2,000 experiences
and 2,000 memories by default), through a real worker (arq mode) and the real model.

Seeded through the real paths (the worker's persist job, with the entries archived in the journal
as resolving them archives them; ``store_memory``). Timed: an export without vectors and one with
them (through the worker), an import of the file with vectors into an empty data folder (inline, in
this process: nothing embedded), the same import again (every record present: what a repeated
import costs), and an import that embeds every text again (at most ``REEMBED_RECORDS`` records of
the file: model-bound, ~200 texts/s here). ``bench ui`` calls :func:`measure_porting` on its own
store.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from itertools import islice
from pathlib import Path
from typing import Any

from bench.common import print_table, progress
from bench.processes import serving
from bench.scale.seed import experience, seed_experiences, seed_memories
from learning_memory.cli.export_file import ExportWriter, check_file, read_lines
from learning_memory.cli.porting import export_store, import_store
from learning_memory.cli.samples import generated_entries
from learning_memory.composition import in_process_executor
from learning_memory.server.journal.journal import Journal
from learning_memory.server.transport import Transport, create_transport
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.memory import RETRIEVE_MEMORIES, RetrieveMemoriesRequest
from learning_memory.shared.settings import Settings, load_settings

REEMBED_RECORDS = 2_000
Row = dict[str, Any]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--experiences", type=int, default=2_000, help="experiences seeded (2000)")
    parser.add_argument("--memories", type=int, default=2_000, help="memories seeded (2000)")


def _settings(env: dict[str, str], **overrides: Any) -> Settings:
    """The settings of a process run with ``env`` (its LMS_* variables), with ``overrides``."""
    values: dict[str, Any] = {
        k.removeprefix("LMS_").lower(): v for k, v in env.items() if k.startswith("LMS_")
    }
    return load_settings(**{**values, **overrides})


def _records(counts: Mapping[Any, int]) -> int:
    return sum(counts.values())


def _row(what: str, records: int, seconds: float, size: Path | None = None) -> Row:
    row: Row = {"what": what, "records": records, "seconds": seconds, "records_per_s": records / seconds}
    if size is not None:
        row["mib"] = size.stat().st_size / 2**20
    progress(f"porting: {what}: {records:,} records in {seconds:.1f} s")
    return row


def _trimmed(source: Path, target: Path, records: int) -> int:
    """The first ``records`` records of ``source`` as a file of their own."""
    header = check_file(source).header
    with ExportWriter(target) as writer:
        for line in islice(read_lines(source), records):
            writer.write(line)
        counts = dict(writer.counts)
        writer.commit(header.model_copy(update={"counts": counts}))
    return _records(counts)


@asynccontextmanager
async def _inline(settings: Settings, folder: Path) -> AsyncIterator[tuple[Transport, Journal, Settings]]:
    """An empty store under ``folder``, its jobs run in this process, the model already loaded."""
    settings = settings.model_copy(
        update={"queue": "inline", "data_dir": folder / "data", "journal_dir": folder / "journal"}
    )
    jobs = await create_transport(settings, in_process_executor)
    journal = Journal(settings.journal_dir, "bench")
    try:
        request = RetrieveMemoriesRequest(query="warm up", limit=1)
        await jobs.run(RETRIEVE_MEMORIES, request, budget_s=RETRIEVE_MEMORIES.timeout_s)
        yield jobs, journal, settings
    finally:
        journal.close()
        await jobs.close()


async def _import(jobs: Transport, journal: Journal, file: Path, settings: Settings) -> float:
    started = time.perf_counter()
    await import_store(jobs, journal, file, project=None, settings=settings)
    return time.perf_counter() - started


async def measure_rows(
    env: dict[str, str], workdir: Path, reembed_records: int = REEMBED_RECORDS
) -> list[Row]:
    """Export and import throughput on the store of the live worker run with ``env``."""
    settings = _settings(env, queue="arq", autostart_worker=False)
    plain, vectors = workdir / "export.jsonl", workdir / "export-vectors.jsonl"
    rows: list[Row] = []
    jobs = ArqTransport(settings)
    journal = Journal(settings.journal_dir, "bench")
    try:
        for what, file, with_vectors in (("export", plain, False), ("export with vectors", vectors, True)):
            started = time.perf_counter()
            header = await export_store(
                jobs, journal, file, project=None, with_vectors=with_vectors, model=settings.embedding_model
            )
            rows.append(_row(what, _records(header.counts), time.perf_counter() - started, file))
    finally:
        journal.close()
        await jobs.close()
    records = rows[0]["records"]
    async with _inline(settings, workdir / "into-empty") as (into, its_journal, its_settings):
        seconds = await _import(into, its_journal, vectors, its_settings)
        rows.append(_row("import with vectors (into an empty store)", records, seconds))
        seconds = await _import(into, its_journal, vectors, its_settings)
        rows.append(_row("import again (every record present)", records, seconds))
    sample = _trimmed(plain, workdir / "sample.jsonl", reembed_records)
    async with _inline(settings, workdir / "embedded-again") as (into, its_journal, its_settings):
        seconds = await _import(into, its_journal, workdir / "sample.jsonl", its_settings)
        rows.append(_row("import embedding every text again", sample, seconds))
    return rows


async def measure_porting(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """For ``bench ui``: each figure as one line of its table."""
    rows = await measure_rows(env, workdir)
    return {
        row["what"]: f"{row['records']:,} records in {row['seconds']:.1f} s: {row['records_per_s']:,.0f}/s"
        + (f" ({row['mib']:.0f} MiB)" if "mib" in row else "")
        for row in rows
    }


async def _seed_journal(settings: Settings, samples: list[Any], count: int) -> None:
    journal = Journal(settings.journal_dir, "bench")
    try:
        for number in range(count):
            journal.import_archived(experience(samples, number), persist=False)
    finally:
        journal.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-porting-"))
    samples = generated_entries(min(args.experiences, 5000) + 10, seed=11)
    random.Random(5).shuffle(samples)
    try:
        async with serving(args.redis_url, tmp) as (client, worker):
            jobs = ArqTransport(_settings(worker.env, queue="arq", autostart_worker=False))
            try:
                seeding = {
                    "experiences_s": await seed_experiences(jobs, samples, range(args.experiences)),
                    "memories_s": await seed_memories(client, args.memories),
                }
            finally:
                await jobs.close()
            await _seed_journal(_settings(worker.env), samples, args.experiences)
            rows = await measure_rows(worker.env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(
        ["what", "records", "seconds", "records/s", "MiB"],
        [
            [
                row["what"],
                f"{row['records']:,}",
                f"{row['seconds']:.1f}",
                f"{row['records_per_s']:,.0f}",
                f"{row['mib']:.1f}" if "mib" in row else "",
            ]
            for row in rows
        ],
    )
    return {
        "parameters": {"experiences": args.experiences, "memories": args.memories},
        "seeding": seeding,
        "rows": rows,
    }
