"""One call for the tools and the hooks: a query's best records of one collection, hybrid-ranked,
near-duplicates collapsed."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from learning_memory.worker.recall.hybrid import FUSION, Candidate, Fusion, Mode, candidates, rank
from learning_memory.worker.recall.timeframe import period_in
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, Vector

# Two records sharing this much of their vocabulary say the same thing: the better one stays.
DUPLICATE_OVERLAP = 0.8
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def duplicate(these: frozenset[str], kept: list[frozenset[str]]) -> bool:
    for other in kept:
        smaller = min(len(these), len(other))
        if smaller and len(these & other) / smaller >= DUPLICATE_OVERLAP:
            return True
    return False


def collapse(ranked: list[Candidate], text: Callable[[dict[str, Any]], str], limit: int) -> list[Candidate]:
    """The first ``limit`` of ``ranked`` that do not repeat a better one."""
    kept: list[frozenset[str]] = []
    out: list[Candidate] = []
    for candidate in ranked:
        these = words(text(candidate.payload))
        if duplicate(these, kept):
            continue
        kept.append(these)
        out.append(candidate)
        if len(out) >= limit:
            break
    return out


async def query_vector(run: JobRun, query: str) -> Vector:
    vector: Vector = (await (await run.services.embedder()).embed([query]))[0]
    return vector


async def recall(
    run: JobRun,
    collection: str,
    query: str,
    vector: Vector,
    *,
    where: Filter | None = None,
    adjust: Callable[[dict[str, Any]], float] | None = None,
    mode: Mode = "hybrid",
    fusion: Fusion = FUSION,
    now: datetime | None = None,
) -> list[Candidate]:
    """Every candidate for ``query`` in ``collection`` that passes ``where``, best first."""
    store = await run.services.vectors()
    if not await store.collection_exists(collection):
        return []
    metadata = await run.services.metadata()
    found = await candidates(
        store, metadata, collection, query, vector, where=where, mode=mode, fusion=fusion
    )
    period = period_in(query, now or datetime.now(UTC))
    return rank(found, mode=mode, fusion=fusion, period=period, adjust=adjust)
