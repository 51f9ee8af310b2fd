"""One call for the tools and the hooks: a query's best records of one collection, hybrid-ranked,
near-duplicates collapsed."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from learning_memory.shared.contracts.context import ContextKind, item_id
from learning_memory.shared.contracts.experiences import collection_for
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.fix_feedback import NONE, Outcomes, feedback_factor
from learning_memory.worker.capture.feedback import outcomes_for
from learning_memory.worker.recall import keywords
from learning_memory.worker.recall.hybrid import FUSION, Candidate, Fusion, Mode, candidates, rank
from learning_memory.worker.recall.threads import in_context
from learning_memory.worker.recall.timeframe import Event, Period, event_in, period_in
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, Vector

# Two records sharing this much of their vocabulary say the same thing: the better one stays.
DUPLICATE_OVERLAP = 0.8
# Where an event a query names is looked for, and how much of its words a record must match.
EVENT_SOURCES = (MEMORIES, collection_for("full"))
EVENT_STRENGTH = 0.5
_WORD = re.compile(r"[a-z0-9]+")


# What a record's standing takes off its relevance: captured rather than written by the agent
# (measured: weighing agent-written experiences by their confidence tier too, gold above silver
# above abandoned, lost related prompts on both our sets), its anchored code rewritten since, or
# gone (kept and searchable, ranked below the living).
AUTO_WEIGHT = 0.9
STALE_WEIGHTS = {"changed": 0.9, "gone": 0.6}
# Of two records as relevant, the newer is likelier to hold: a nudge, halved every RECENCY_DAYS.
RECENCY = 0.05
RECENCY_DAYS = 30.0


def standing(payload: dict[str, Any]) -> float:
    """How much a record's source, staleness and age leave of its relevance."""
    weight = AUTO_WEIGHT if payload.get("source") == "auto" else 1.0
    stale = payload.get("stale")
    if isinstance(stale, str):
        weight *= STALE_WEIGHTS.get(stale, 1.0)
    created = payload.get("created_ts")
    if isinstance(created, int | float) and not isinstance(created, bool):
        # Whole days: an answer does not change from one second to the next.
        age_days = max(time.time() - created, 0.0) // 86_400
        weight *= 1.0 + RECENCY * 0.5 ** (age_days / RECENCY_DAYS)
    return weight


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


def context_id(kind: ContextKind, hit: Candidate) -> str:
    """The id a hit is shown and logged by: an experience is named by its GHAP entry (the same on
    every axis), the others by their point."""
    return item_id(kind, str(hit.payload.get("ghap_id", hit.id)) if kind == "experience" else hit.id)


async def weigh_what_followed(
    run: JobRun, hits: Sequence[tuple[ContextKind, Candidate]]
) -> list[tuple[ContextKind, Candidate, Outcomes]]:
    """``hits`` with their helped / not-helped counts, each score times the factor of what
    followed when it was shown before (``shared.fix_feedback``: one that did not help ranks
    lower), best first. One read of the fix index for them all."""
    shown = await outcomes_for(run.services.settings.data_dir, (context_id(k, h) for k, h in hits))
    weighed = []
    for kind, hit in hits:
        outcome = shown.get(context_id(kind, hit), NONE)
        weighed.append((kind, replace(hit, score=hit.score * feedback_factor(outcome)), outcome))
    weighed.sort(key=lambda entry: entry[1].score, reverse=True)
    return weighed


async def query_vector(run: JobRun, query: str) -> Vector:
    vector: Vector = (await (await run.services.embedder()).embed([query]))[0]
    return vector


class _Unasked:
    """``recall``'s default period: not read yet."""


UNASKED = _Unasked()


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
    period: Period | _Unasked | None = UNASKED,
    curated_out: bool = False,
    threads: bool = True,
) -> list[Candidate]:
    """Every candidate for ``query`` in ``collection`` that passes ``where``, best first.
    ``period``: the time the query names when the caller has read it already (:func:`when`,
    once for several collections), else read here. ``curated_out``: those a person set aside
    too (:func:`set_aside`). ``threads``: records read beside their neighbours in the session
    that stored them (``worker.recall.threads``), else each on its own relevance."""
    store = await run.services.vectors()
    if not await store.collection_exists(collection):
        return []
    metadata = await run.services.metadata()
    if isinstance(period, _Unasked):
        period = await when(run, query, now)
    found = await candidates(
        store, metadata, collection, query, vector, where=where, mode=mode, fusion=fusion
    )
    if not curated_out:
        found = [hit for hit in found if not set_aside(hit.payload)]
    ranked = rank(found, mode=mode, fusion=fusion, period=period, adjust=adjust)
    if mode != "hybrid" or not threads:
        return ranked
    return await in_context(
        store,
        collection,
        ranked,
        vector,
        where=where,
        fusion=fusion,
        period=period,
        adjust=adjust,
        keep=(lambda payload: True) if curated_out else (lambda payload: not set_aside(payload)),
    )


def set_aside(payload: dict[str, Any]) -> bool:
    """Whether a person took the record out of what is recalled: a value retired, an experience
    marked wrong (``worker.curation``). Kept and readable by id; never found by a query."""
    return bool(payload.get("retired") or payload.get("wrong"))


async def when(run: JobRun, query: str, now: datetime | None = None) -> Period | None:
    """The period ``query`` names: a date or a stretch of time, or the time before or after an
    event a stored record dates."""
    period = period_in(query, now or datetime.now(UTC))
    event = event_in(query) if period is None else None
    return await event_period(run, event) if event is not None else period


async def event_period(run: JobRun, event: Event) -> Period | None:
    """The time before or after ``event``, dated by the memory or experience that tells of it
    best, if one tells of it well enough."""
    words = keywords.terms(event.words)
    store = await run.services.vectors()
    metadata = await run.services.metadata()
    best: tuple[float, str, str] | None = None
    for collection in EVENT_SOURCES:
        if not await store.collection_exists(collection):
            continue
        found = await keywords.search(metadata, collection, words, 1)
        for point, score in found.hits:
            strength = found.strength(score)
            if strength >= EVENT_STRENGTH and (best is None or strength > best[0]):
                best = (strength, collection, point)
    if best is None:
        return None
    records = await store.get(best[1], [best[2]])
    stamp = records[0].payload.get("created_ts") if records else None
    if not isinstance(stamp, int | float) or isinstance(stamp, bool):
        return None
    when = datetime.fromtimestamp(stamp, UTC)
    return Period.before(when, best[2]) if event.before else Period.after(when, best[2])
