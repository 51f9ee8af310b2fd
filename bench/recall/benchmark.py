"""Runs ``python -m bench recall``: LoCoMo and our own labelled sets, every mode in one run."""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BenchError, print_table, progress
from bench.recall import locomo, own_sets
from bench.recall.measures import Scores, p, table_rows
from learning_memory.shared.contracts.memory import COLLECTION, MemoryRecord
from learning_memory.shared.settings import Settings
from learning_memory.worker.jobs.memory import INDEXES
from learning_memory.worker.jobs.memory import _payload as memory_payload
from learning_memory.worker.jobs.memory import _weight as memory_weight
from learning_memory.worker.recall.hybrid import FUSION, MODES, Fusion, Mode
from learning_memory.worker.recall.search import query_vector, recall
from learning_memory.worker.services import JobRun, WorkerServices
from learning_memory.worker.vectors.base import CollectionSpec, Filter, MatchValue, PointData

DEPTH = 10
NOW = datetime(2024, 1, 1, tzinfo=UTC)  # after every LoCoMo conversation
BATCH = 64
DEFAULT_LOCOMO = Path("bench/data/external/locomo10_v2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--locomo",
        type=Path,
        default=DEFAULT_LOCOMO,
        help="data/locomo10.zip of snap-research/locomo, the locomo10_v2 folder it holds, or "
        f"locomo10.json ({DEFAULT_LOCOMO}); skipped when absent",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep the data folders here")
    parser.add_argument("--questions", type=int, default=0, help="ask only the first N LoCoMo questions")
    parser.add_argument("--skip-own", action="store_true", help="LoCoMo only")
    parser.add_argument(
        "--memories-per-session",
        type=int,
        default=0,
        help="own sets: memories stored this many to a client session, in the set's order (0: each alone)",
    )
    parser.add_argument(
        "--fusion",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a hybrid setting changed for this run (worker.recall.hybrid.Fusion), e.g. dense_share=0.6",
    )


def fusion_of(changes: list[str]) -> Fusion:
    values: dict[str, Any] = {}
    for change in changes:
        name, _, value = change.partition("=")
        if name not in Fusion.__dataclass_fields__ or not value:
            raise BenchError(
                f"--fusion {change!r}: use NAME=VALUE with NAME one of {list(Fusion.__dataclass_fields__)}"
            )
        values[name] = int(value) if name in ("depth", "rrf_k") else float(value)
    return replace(FUSION, **values)


def _services(folder: Path) -> WorkerServices:
    from learning_memory.shared.log import configure_logging

    configure_logging("WARNING")
    return WorkerServices(Settings(data_dir=folder, queue="inline", log_level="WARNING"))


async def _store_turns(run: JobRun, turns: list[locomo.Turn]) -> None:
    embedder = await run.services.embedder()
    store = await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension, INDEXES))
    places: dict[str, itertools.count[int]] = {}
    for start in range(0, len(turns), BATCH):
        batch = turns[start : start + BATCH]
        vectors = await embedder.embed([t.text for t in batch])
        points = []
        for turn, vector in zip(batch, vectors, strict=True):
            memory = MemoryRecord(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, turn.id)),
                content=turn.text,
                category="fact",
                importance=0.5,
                tags=[],
                created_at=turn.created_at,
                project=turn.conversation,
            )
            # Each session of a conversation is one thread, its turns in the order they were said,
            # as a client session storing them one after another would number them.
            thread = turn.id.rsplit(":", 1)[0]
            seq = next(places.setdefault(thread, itertools.count()))
            payload = {**memory_payload(memory, thread, seq), "turn": turn.id}
            points.append(PointData(memory.id, vector, payload))
        await store.upsert(COLLECTION, points)
        if start % (BATCH * 20) == 0:
            progress(f"recall: {start + len(batch)} LoCoMo turns stored")


async def _locomo(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    turns, questions = locomo.load(args.locomo)
    if args.questions:
        questions = questions[: args.questions]
    services = _services(folder)
    run = JobRun(services=services, job_id="bench-recall", job_try=1)
    try:
        stored = await (await services.vectors()).collection_exists(COLLECTION)
        if not stored:
            started = time.perf_counter()
            await _store_turns(run, turns)
            progress(f"recall: {len(turns)} turns stored in {time.perf_counter() - started:.0f} s")
        scores: dict[Mode, Scores] = {mode: Scores() for mode in MODES}
        fusion = fusion_of(args.fusion)
        latency: list[float] = []
        for n, question in enumerate(questions):
            vector = await query_vector(run, question.text)
            where = Filter((MatchValue("project", question.conversation),))
            for mode in MODES:
                started = time.perf_counter()
                ranked = await recall(
                    run,
                    COLLECTION,
                    question.text,
                    vector,
                    where=where,
                    adjust=memory_weight,
                    mode=mode,
                    now=NOW,
                    fusion=fusion,
                )
                if mode == "hybrid":
                    latency.append((time.perf_counter() - started) * 1000)
                ids = [str(c.payload.get("turn")) for c in ranked[:DEPTH]]
                scores[mode].add(question.category, ids, question.evidence)
            if n % 200 == 0:
                progress(f"recall: {n} LoCoMo questions asked")
        results = {str(mode): scores[mode].summary() for mode in MODES}
        for metric in ("r@5", "r@10", "mrr"):
            print(f"\nLoCoMo {metric} ({len(questions)} questions, {len(turns)} memories)")
            print_table(["category", *MODES], [[str(c) for c in row] for row in table_rows(results, metric)])
        return {
            "memories": len(turns),
            "questions": len(questions),
            "by_mode": results,
            "hybrid_ms": {"p50": round(p(latency, 0.5), 1), "p95": round(p(latency, 0.95), 1)},
        }
    finally:
        await services.close()


async def _own(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    fusion = fusion_of(args.fusion)
    out = []
    for path in own_sets.SETS:
        services = _services(root / path.stem)
        try:
            found = await own_sets.measure(
                JobRun(services=services, job_id="bench-recall", job_try=1),
                path,
                fusion,
                args.memories_per_session,
            )
        finally:
            await services.close()
        out.append(found)
        together = [str(found["by_mode"][mode]["all"]["r@3"]) for mode in MODES]
        each = [str(found["each_tool_r@3"][mode]) for mode in MODES]
        print(
            f"\n{path.name}: recall@3 of related prompts "
            f"({found['records']} records, {found['prompts']} prompts)"
        )
        print_table(["ranked", *MODES], [["both kinds in one list", *together], ["each tool", *each]])
        print(f"\n{path.name}: the prompt hook (related: right record injected; others: nothing injected)")
        kinds = sorted(next(iter(found["hook"].values())))
        print_table(
            ["hook", *kinds],
            [[name, *(str(rates[k]) for k in kinds)] for name, rates in found["hook"].items()],
        )
        print(f"hook (assemble_context) p50 {found['hook_ms']['p50']} ms, p95 {found['hook_ms']['p95']} ms")
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as scratch:
        root = args.workdir or Path(scratch)
        if not args.skip_own:
            out["own_sets"] = await _own(args, root)
        if args.locomo.exists():
            out["locomo"] = await _locomo(args, root / "locomo")
        else:
            progress(f"recall: no LoCoMo data at {args.locomo}; skipped (see --locomo)")
        if not out:
            raise BenchError("nothing to measure")
    return out
