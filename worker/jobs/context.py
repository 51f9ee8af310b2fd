"""Context jobs: experiences, values and memories ranked together for a query; premortem warnings;
the records behind context ids.

One embedding of the query serves all three searches. Each kind is ranked by hybrid recall
(``worker.recall``), whose relevance is on one absolute scale, so the three kinds rank together;
anything is put forward only when the best of them reaches the caller's cosine bar or is relevant
on both sides (``_worth_saying``).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from functools import partial
from typing import Any

from learning_memory.shared.context_lines import estimate_tokens, line_for, one_line
from learning_memory.shared.contracts.context import (
    ASSEMBLE_CONTEXT,
    EXPAND_CONTEXT,
    KIND_PREFIXES,
    PREMORTEM,
    AssembleContextRequest,
    AssembleContextResponse,
    ContextItem,
    ContextKind,
    ExpandContextRequest,
    ExpandContextResponse,
    ExpandedItem,
    PremortemRequest,
    PremortemResponse,
    PremortemWarning,
    item_id,
)
from learning_memory.shared.contracts.experiences import collection_for, point_id
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.fix_feedback import Outcomes
from learning_memory.worker.learning.decay import age_support_weight
from learning_memory.worker.recall.hybrid import FUSION, Candidate
from learning_memory.worker.recall.search import (
    context_id,
    duplicate,
    query_vector,
    recall,
    standing,
    weigh_what_followed,
    when,
    words,
)
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, MatchAny, MatchValue

EXPERIENCES = collection_for("full")
# The hooks ask for a few items within milliseconds: each side looks this deep, not the tools' 50
# (with whole experience payloads, reading 50 a side per kind doubled the prompt hook's time).
CONTEXT_FUSION = replace(FUSION, depth=16)
# A bearing (the relevance of both sides together, the record's standing, a period the query
# names, with each of the prompt's words counted once) that speaks for a record whatever its
# cosine: a prompt naming a record's rare words, or asking of its time. Counted once: a record
# that repeats a word is more about it, but holds no more of the prompt.
RELEVANT = 0.40
# ...when its meaning is not far off: a greeting whose one word that is not a stopword ("today")
# a record holds matches "all" of the prompt on the keyword side.
RELEVANT_MIN_COSINE = 0.20
# Once one record clears the caller's bar, others may stand this much lower in cosine, if they
# are at least this share as relevant as the best (a near cosine alone is often a shared topic).
FOLLOWER_GAP = 0.08
FOLLOWER_SHARE = 0.5
SOURCES: tuple[tuple[ContextKind, str], ...] = (
    ("experience", EXPERIENCES),
    ("value", VALUES_COLLECTION),
    ("memory", MEMORIES),
)


def _clamp(score: float) -> float:
    return min(1.0, max(0.0, score))


def _teaches(payload: dict[str, Any]) -> bool:
    """Whether an experience has something to tell: an abandoned entry only when someone wrote
    down what went wrong or what worked (those a newer start_ghap displaced say nothing, and
    would only echo an old task back), and never when the code it is anchored to is gone."""
    if payload.get("stale") == "gone":  # its code is no more: kept for search, not put forward
        return False
    if payload.get("outcome_status") != "abandoned":
        return True
    return bool(payload.get("root_cause") or payload.get("surprise") or payload.get("lesson"))


def _puts_forward(kind: ContextKind, payload: dict[str, Any]) -> bool:
    if kind == "experience":
        return _teaches(payload)
    return payload.get("stale") != "gone"  # a memory or value whose code is no more


def _weight(kind: ContextKind, half_life_days: float, payload: dict[str, Any]) -> float:
    """What the agent wrote itself ranks above what was captured from a session, and living code
    above rewritten code, when both bear on the query as much (``worker.recall.search.standing``);
    a value nothing has borne out for long ranks below a fresh one."""
    if kind == "value":
        return age_support_weight(payload, half_life_days)[2] * standing(payload)
    return standing(payload)


def _worth_saying(
    found: list[tuple[ContextKind, Candidate]], bar: float
) -> list[tuple[ContextKind, Candidate]]:
    """What to put forward: the records that lead (their cosine clears ``bar``, or their bearing
    RELEVANT with a cosine of RELEVANT_MIN_COSINE), and with them, when there are any, the records
    within FOLLOWER_GAP of the bar that are at least FOLLOWER_SHARE as relevant as the best leader.

    The question is first whether the prompt bears on the store at all, and the best records
    answer it; a short fact the prompt means without its words stands a little lower in cosine,
    and a bar applied to each record alone left it out."""
    best = max((hit.score for _, hit in found if _leads(hit, bar)), default=None)
    if best is None:
        return []
    floor = FOLLOWER_SHARE * best
    return [
        (kind, hit)
        for kind, hit in found
        if _leads(hit, bar) or (hit.cosine >= bar - FOLLOWER_GAP and hit.score >= floor)
    ]


def _leads(hit: Candidate, bar: float) -> bool:
    relevant = max(RELEVANT, bar)  # a caller's higher bar holds for both
    return hit.cosine >= bar or (hit.bearing >= relevant and hit.cosine >= RELEVANT_MIN_COSINE)


def _leaders_first(
    weighed: list[tuple[ContextKind, Candidate, Outcomes]], bar: float
) -> list[tuple[ContextKind, Candidate, Outcomes]]:
    """``weighed`` (best first) with the records that lead before those that only come with
    them: a follower goes with its leaders, it does not take a leader's place in the few shown."""
    return sorted(weighed, key=lambda entry: not _leads(entry[1], bar))


@job(ASSEMBLE_CONTEXT)
async def assemble_context(run: JobRun, request: AssembleContextRequest) -> AssembleContextResponse:
    store = await run.services.vectors()
    present = [(kind, name) for kind, name in SOURCES if await store.collection_exists(name)]
    if not present:  # a new user: answer at once, without waiting for the model
        return AssembleContextResponse(items=[], tokens=0, candidates=0)
    vector = await query_vector(run, request.query)
    half_life = run.services.settings.value_half_life_days
    period = await when(run, request.query)  # read once for the three kinds
    found: list[tuple[ContextKind, Candidate]] = []
    for kind, name in present:
        weight = partial(_weight, kind, half_life)
        # Each record on its own relevance: the hook speaks of what bears on the prompt itself,
        # and the three kinds compare only so (a memory raised by its neighbours took the place
        # of an experience as relevant on our labelled sets).
        ranked = await recall(
            run,
            name,
            request.query,
            vector,
            adjust=weight,
            fusion=CONTEXT_FUSION,
            period=period,
            threads=False,
        )
        found += [(kind, hit) for hit in ranked[: request.max_items * 2] if _puts_forward(kind, hit.payload)]
    found = _worth_saying(found, request.min_score)

    items: list[ContextItem] = []
    kept: list[frozenset[str]] = []
    candidates = used = 0
    for kind, hit, outcome in _leaders_first(await weigh_what_followed(run, found), request.min_score):
        text = line_for(kind, hit.payload)
        these = words(text)
        if duplicate(these, kept):
            continue
        kept.append(these)
        candidates += 1
        identifier = context_id(kind, hit)
        tokens = estimate_tokens(f"- [{identifier}] {text}")
        if len(items) >= request.max_items or used + tokens > request.budget_tokens:
            continue
        items.append(
            ContextItem(
                id=identifier,
                kind=kind,
                score=_clamp(hit.score),
                text=text,
                tokens=tokens,
                helped=outcome.helped,
                not_helped=outcome.not_helped,
            )
        )
        used += tokens
    return AssembleContextResponse(items=items, tokens=used, candidates=candidates)


@job(PREMORTEM)
async def premortem_warnings(run: JobRun, request: PremortemRequest) -> PremortemResponse:
    store = await run.services.vectors()
    if not await store.collection_exists(EXPERIENCES):
        return PremortemResponse(warnings=[])
    # Worded like the stored story ("Goal: ...\nHypothesis: ..."), so like is compared with like.
    query = f"Goal: {request.goal}"
    if request.hypothesis:
        query += f"\nHypothesis: {request.hypothesis}"
    vector = await query_vector(run, query)
    conditions: list[MatchValue | MatchAny] = [MatchAny("outcome_status", ("falsified", "abandoned"))]
    if request.domain is not None:
        conditions.append(MatchValue("domain", request.domain))
    # The words without the labels, which every stored story has.
    words = f"{request.goal} {request.hypothesis or ''}"
    where = Filter(tuple(conditions))
    depth = replace(CONTEXT_FUSION, depth=max(CONTEXT_FUSION.depth, request.limit * 4))
    found = await recall(run, EXPERIENCES, words, vector, where=where, adjust=standing, fusion=depth)
    warnings: list[PremortemWarning] = []
    for _, hit, outcome in await weigh_what_followed(
        run, [("experience", h) for h in found[: request.limit * 4]]
    ):
        # Each warning must reach the bar on its own: it interrupts a start, and none follows
        # another in as _worth_saying lets context items follow their leaders.
        if hit.cosine < request.min_score or not _teaches(hit.payload):
            continue
        data = hit.payload
        warnings.append(
            PremortemWarning(
                ghap_id=str(data["ghap_id"]),
                domain=data["domain"],
                goal=data["goal"],
                hypothesis=data["hypothesis"],
                outcome_status=data["outcome_status"],
                result=one_line(str(data.get("outcome_result") or ""))
                + (" (code changed since)" if data.get("stale") == "changed" else ""),
                surprise=data.get("surprise"),
                root_cause=data.get("root_cause"),
                lesson=data.get("lesson"),
                score=_clamp(hit.score),
                created_at=data["created_at"],
                helped=outcome.helped,
                not_helped=outcome.not_helped,
            )
        )
        if len(warnings) >= request.limit:
            break
    return PremortemResponse(warnings=warnings)


def _parse(identifier: str) -> tuple[ContextKind, str] | None:
    prefix, _, raw = identifier.strip().partition(":")
    kind = KIND_PREFIXES.get(prefix)
    try:
        return (kind, str(uuid.UUID(raw))) if kind is not None else None
    except ValueError:
        return None


# Bookkeeping fields of the stored payloads that a reader of the record has no use for.
_INTERNAL = frozenset(
    {
        "created_ts",
        "resolved_ts",
        "weight",
        "axis",
        "member_ghap_ids",
        "supporters",
        "evidence_ts",
        "anchor_files",
    }
)


@job(EXPAND_CONTEXT)
async def expand_context(run: JobRun, request: ExpandContextRequest) -> ExpandContextResponse:
    store = await run.services.vectors()
    collections = dict((kind, name) for kind, name in SOURCES)
    items: list[ExpandedItem] = []
    missing: list[str] = []
    for identifier in dict.fromkeys(request.ids):  # each once, in the order asked
        parsed = _parse(identifier)
        if parsed is None:
            missing.append(identifier)
            continue
        kind, record_id = parsed
        name = collections[kind]
        point = point_id(record_id, "full") if kind == "experience" else record_id
        found = await store.get(name, [point]) if await store.collection_exists(name) else []
        if not found:
            missing.append(identifier)
            continue
        record = {key: value for key, value in found[0].payload.items() if key not in _INTERNAL}
        items.append(ExpandedItem(id=item_id(kind, record_id), kind=kind, record=record))
    return ExpandContextResponse(items=items, missing=missing)
