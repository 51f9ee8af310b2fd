"""Our labelled sets (``bench/data/context_set.json``, ``bench/data/recall_set.json``): experiences
and memories as agents write them, prompts as users type them (worded unlike the stored text),
unrelated prompts and near misses.

Each set is stored through the worker's own jobs in a data folder of its own, its records
dated over the stretch of time the set names and its prompts read at the set's ``now``. Every
prompt is then ranked in every mode, recall@3 of the ids it expects: over experiences and
memories together, as the prompt hook weighs them, and in each kind's own list, as
search_experiences and retrieve_memories answer. It is also asked of ``assemble_context`` as the
prompt hook asks it: what the hook would inject, against the dense side's order at the same bar
(the hook before hybrid recall).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from unittest.mock import patch

from bench.recall.measures import Scores, p
from learning_memory.shared.contracts.context import AssembleContextRequest
from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    Lesson,
    PersistExperienceRequest,
    Resolution,
    RootCause,
    collection_for,
    confidence_tier,
)
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.contracts.memory import MemoryRecord, StoreMemoryRequest
from learning_memory.shared.settings import Settings
from learning_memory.worker.jobs import context as context_job
from learning_memory.worker.jobs.experiences import persist_experience
from learning_memory.worker.jobs.memory import _weight as memory_weight
from learning_memory.worker.jobs.memory import store_memory
from learning_memory.worker.recall.hybrid import MODES, Candidate, Fusion, Mode
from learning_memory.worker.recall.search import query_vector, recall, standing, when
from learning_memory.worker.recall.timeframe import Period
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Vector

SETS = (Path("bench/data/context_set.json"), Path("bench/data/recall_set.json"))
EXPERIENCES = collection_for("full")
HOOK_BUDGET_TOKENS = 280  # the prompt hook's 300, less its header
HOOK_MAX_ITEMS = 4
HOOK_BAR = Settings().context_min_score  # the prompt hook's cosine bar (LMS_CONTEXT_MIN_SCORE)


def asked_at(labelled: dict[str, Any], prompt: dict[str, Any]) -> datetime:
    """When a prompt is typed (its own ``asked``, else the set's ``now``): what "yesterday" and
    "last week" count back from, fixed so that a run's figures do not depend on the day it runs."""
    return datetime.fromisoformat(prompt.get("asked") or labelled["dated"]["now"])


def _dates(labelled: dict[str, Any], records: list[dict[str, Any]]) -> list[datetime]:
    """When each record was stored: its own ``created``, else spread evenly over the set's
    stretch of time in the set's order."""
    first, last = (datetime.fromisoformat(labelled["dated"][end]) for end in ("from", "to"))
    step = (last - first) / max(len(records) - 1, 1)
    return [
        datetime.fromisoformat(r["created"]) if "created" in r else first + n * step
        for n, r in enumerate(records)
    ]


async def seed(run: JobRun, labelled: dict[str, Any], per_session: int = 0) -> dict[str, str]:
    """Store the set; return each stored id (ghap id, memory id) → the set's id. ``per_session``:
    memories stored that many to a client session, in the set's order (0: none in a thread)."""
    local: dict[str, str] = {}
    experiences = labelled["experiences"]
    for e, stored in zip(experiences, _dates(labelled, experiences), strict=True):
        lesson = Lesson(**e["lesson"]) if e.get("lesson") else None
        resolution = Resolution(
            status=e["status"],
            result=e["result"],
            surprise=e.get("surprise"),
            root_cause=RootCause(**e["root_cause"]) if e.get("root_cause") else None,
            lesson=lesson,
            confidence_tier=confidence_tier(e["status"], lesson, orphaned=False),
            resolved_at=stored,
            resolved_in_session="bench",
        )
        entry = GhapEntry(
            id=f"ghap_{uuid.uuid5(uuid.NAMESPACE_URL, e['id'] + e['goal']).hex[:12]}",
            session_id="bench",
            domain=e["domain"],
            strategy=e["strategy"],
            goal=e["goal"],
            hypothesis=e["hypothesis"],
            action=e["action"],
            prediction=e["prediction"],
            created_at=stored,
            updated_at=stored,
            resolution=resolution,
        )
        await persist_experience(run, PersistExperienceRequest(entry=entry))
        local[entry.id] = e["id"]
    memories = labelled["memories"]
    for n, (m, created) in enumerate(zip(memories, _dates(labelled, memories), strict=True)):
        memory = MemoryRecord(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, m["id"] + m["content"])),
            content=m["content"],
            category=m["category"],
            importance=m["importance"],
            tags=m["tags"],
            created_at=created,
        )
        thread, seq = (f"session-{n // per_session}", n % per_session) if per_session else (None, None)
        await store_memory(run, StoreMemoryRequest(memory=memory, thread=thread, seq=seq))
        local[memory.id] = m["id"]
    return local


def _local(candidate: Candidate, local: dict[str, str]) -> str:
    stored = str(candidate.payload.get("ghap_id", candidate.id))
    return local.get(stored, stored)


async def _lists(
    run: JobRun, text: str, vector: Vector, period: Period | None, mode: Mode, fusion: Fusion
) -> dict[str, list[Candidate]]:
    """Experiences and memories, each ranked and weighed as search_experiences and
    retrieve_memories rank them (the weights apply in the hybrid mode only)."""
    return {
        collection: await recall(
            run, collection, text, vector, mode=mode, fusion=fusion, adjust=adjust, period=period
        )
        for collection, adjust in ((EXPERIENCES, standing), (MEMORIES, memory_weight))
    }


def _together(lists: dict[str, list[Candidate]]) -> list[Candidate]:
    """Both kinds in one list, as the prompt hook weighs them against each other."""
    return sorted((c for found in lists.values() for c in found), key=lambda c: c.score, reverse=True)


def _each_tool(lists: dict[str, list[Candidate]], local: dict[str, str], expected: set[str]) -> float:
    """The share of ``expected`` in the first 3 of its own kind's list: what retrieve_memories
    and search_experiences each answer."""
    tops = {_local(c, local) for found in lists.values() for c in found[:3]}
    return len(expected & tops) / len(expected)


async def _hook(
    run: JobRun, text: str, local: dict[str, str], now: datetime, mode: Mode = "hybrid"
) -> list[str]:
    """What the prompt hook injects; ``mode="dense"``: as it did before hybrid recall (the same
    job, its searches ranked by the dense side alone)."""
    request = AssembleContextRequest(
        query=text, budget_tokens=HOOK_BUDGET_TOKENS, min_score=HOOK_BAR, max_items=HOOK_MAX_ITEMS
    )
    searches = patch.object(context_job, "recall", partial(recall, mode=mode))
    with (
        patch.object(context_job, "when", partial(when, now=now)),
        searches if mode != "hybrid" else contextlib.nullcontext(),
    ):
        answer = await context_job.assemble_context(run, request)
    return [local.get(item.id.partition(":")[2], item.id) for item in answer.items]


async def measure(run: JobRun, path: Path, fusion: Fusion, per_session: int = 0) -> dict[str, Any]:
    labelled = json.loads(path.read_text())  # noqa: ASYNC240 - a small file, read once
    local = await seed(run, labelled, per_session)
    scores: dict[Mode, Scores] = {mode: Scores() for mode in MODES}
    each_tool: dict[Mode, list[float]] = {mode: [] for mode in MODES}
    hooks: dict[str, dict[str, list[bool]]] = {"hook (hybrid order)": {}, "dense order": {}}
    wrong: dict[str, list[str]] = {name: [] for name in hooks}
    latency: list[float] = []
    for prompt in labelled["prompts"]:
        expected, now = set(prompt["expected"]), asked_at(labelled, prompt)
        if expected:
            vector, period = await query_vector(run, prompt["text"]), await when(run, prompt["text"], now)
            for mode in MODES:
                lists = await _lists(run, prompt["text"], vector, period, mode, fusion)
                ranked = [_local(c, local) for c in _together(lists)]
                scores[mode].add(prompt["kind"], ranked, expected)
                each_tool[mode].append(_each_tool(lists, local, expected))
        started = time.perf_counter()
        injected = await _hook(run, prompt["text"], local, now)
        latency.append((time.perf_counter() - started) * 1000)
        former = await _hook(run, prompt["text"], local, now, "dense")
        for name, shown in (("hook (hybrid order)", injected), ("dense order", former)):
            right = bool(expected & set(shown)) if expected else not shown
            hooks[name].setdefault(prompt["kind"], []).append(right)
            if not right:
                wrong[name].append(prompt["id"])
    return {
        "set": path.name,
        "records": len(labelled["experiences"]) + len(labelled["memories"]),
        "prompts": len(labelled["prompts"]),
        # Both kinds in one list, as the prompt hook ranks them.
        "by_mode": {mode: scores[mode].summary() for mode in MODES},
        # Each kind in its own list, as retrieve_memories and search_experiences answer.
        "each_tool_r@3": {mode: round(sum(v) / len(v), 3) for mode, v in each_tool.items()},
        # related: the share whose record the hook injected; unrelated, near_miss: the share kept quiet.
        "hook": {
            name: {kind: round(sum(v) / len(v), 3) for kind, v in sorted(kinds.items())}
            for name, kinds in hooks.items()
        },
        "hook_wrong": wrong,  # the prompts each order got wrong, to look into
        "hook_ms": {"p50": round(p(latency, 0.5), 1), "p95": round(p(latency, 0.95), 1)},
    }
