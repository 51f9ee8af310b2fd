"""Experience jobs: embed a resolved GHAP entry on its axes and store it; search one axis.

Each axis is its own collection (``experiences_{axis}``) holding one point per experience,
so that clustering and search on an axis compare like with like: strategies with strategies,
surprises with surprises. Every point carries the whole experience in its payload, so a hit
on any axis is answered without a second lookup.
"""

from __future__ import annotations

from typing import Any

from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.contracts.experiences import (
    AXES,
    PERSIST_EXPERIENCE,
    SEARCH_EXPERIENCES,
    TIER_WEIGHTS,
    Axis,
    ExperienceHit,
    GhapEntry,
    PersistExperienceRequest,
    PersistExperienceResponse,
    Resolution,
    SearchExperiencesRequest,
    SearchExperiencesResponse,
    collection_for,
    point_id,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.log import get_logger
from learning_memory.worker.learning.decay import note_support
from learning_memory.worker.recall.hybrid import Candidate
from learning_memory.worker.recall.search import query_vector, recall, standing, weigh_what_followed
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Condition,
    Filter,
    MatchValue,
    PayloadIndexType,
    PointData,
)

log = get_logger(__name__)

# The fields search filters on, plus ghap_id (to find an experience's points), created_ts
# (to order or bound by time), and who wrote it for which repository; the same on every axis.
INDEXES: dict[str, PayloadIndexType] = {
    "domain": "keyword",
    "outcome_status": "keyword",
    "confidence_tier": "keyword",
    "strategy": "keyword",
    "ghap_id": "keyword",
    "created_ts": "float",
    "source": "keyword",
    "project": "keyword",
    "anchor_files": "keyword",
}
# Hits read beyond a search's limit, for those that did not help to fall behind.
FEEDBACK_SLACK = 5


def _words(label: str) -> str:
    # "root-cause-analysis" reads as three words to a sentence model; hyphenated it is one odd token.
    return label.replace("-", " ")


def _present(value: str | None) -> str | None:
    """The text if it says anything, else None: a blank surprise is no surprise."""
    return value.strip() if value is not None and value.strip() else None


def _lines(parts: list[tuple[str, str | None]]) -> str:
    return "\n".join(f"{label}: {text}" for label, text in parts if text)


def _root_cause_text(resolution: Resolution) -> str | None:
    cause = resolution.root_cause
    if cause is None:
        return None
    description = _present(cause.description)
    return f"{_words(cause.category)}: {description}" if description else _words(cause.category)


def _lesson_text(resolution: Resolution) -> str | None:
    lesson = resolution.lesson
    if lesson is None:
        return None
    parts = [text for text in (_present(lesson.what_worked), _present(lesson.takeaway)) if text]
    return "; ".join(parts) or None


def axis_texts(entry: GhapEntry, resolution: Resolution) -> dict[Axis, str]:
    """The text embedded on each axis the entry has (surprise and root_cause only when present)."""
    outcome: str = resolution.status
    if result := _present(resolution.result):
        outcome = f"{outcome}, {result}"
    surprise = _present(resolution.surprise)
    root_cause = _root_cause_text(resolution)
    what_worked = _present(resolution.lesson.what_worked) if resolution.lesson else None
    texts: dict[Axis, str] = {
        # The whole story in the order it happened, labelled so a reader (and a model) sees the roles.
        "full": _lines(
            [
                ("Goal", _present(entry.goal)),
                ("Hypothesis", _present(entry.hypothesis)),
                ("Action", _present(entry.action)),
                ("Prediction", _present(entry.prediction)),
                ("Outcome", outcome),
                ("Surprise", surprise),
                ("Root cause", root_cause),
                ("Lesson", _lesson_text(resolution)),
            ]
        ),
        # How it was approached, not what it was about: the goal stays out so that the same
        # strategy on different problems lands close together.
        "strategy": _lines(
            [
                ("Strategy", _words(entry.strategy)),
                ("Action", _present(entry.action)),
                ("What worked", what_worked),
            ]
        ),
    }
    if surprise:
        # The surprise leads; the result only gives it context.
        texts["surprise"] = _lines([("Surprise", surprise), ("Result", _present(resolution.result))])
    if root_cause:
        texts["root_cause"] = root_cause
    return texts


def payload(entry: GhapEntry, resolution: Resolution, axis: str) -> dict[str, Any]:
    """Everything an ExperienceHit needs, plus what clustering and filters use."""
    return {
        "ghap_id": entry.id,
        "axis": axis,
        "domain": entry.domain,
        "strategy": entry.strategy,
        "goal": entry.goal,
        "hypothesis": entry.hypothesis,
        "action": entry.action,
        "prediction": entry.prediction,
        "iteration_count": entry.iteration_count,
        "outcome_status": resolution.status,
        "outcome_result": resolution.result,
        "surprise": resolution.surprise,
        "root_cause": resolution.root_cause.model_dump(mode="json") if resolution.root_cause else None,
        "lesson": resolution.lesson.model_dump(mode="json") if resolution.lesson else None,
        "confidence_tier": resolution.confidence_tier,
        "evidence": [item.model_dump(mode="json") for item in entry.evidence],
        "weight": TIER_WEIGHTS[resolution.confidence_tier],
        "created_at": entry.created_at.isoformat(),
        "created_ts": entry.created_at.timestamp(),
        "resolved_at": resolution.resolved_at.isoformat(),
        "resolved_ts": resolution.resolved_at.timestamp(),
        "source": entry.source,
        "anchors": [anchor.model_dump(mode="json") for anchor in entry.anchors],
        # Which experiences a session's edits may have made stale (worker.jobs.staleness).
        "anchor_files": sorted({anchor.file for anchor in entry.anchors}),
        "stale": None,  # told anew: its anchors are as it says
        "occurrences": entry.occurrences,
        "last_seen": entry.last_seen.isoformat() if entry.last_seen else None,
        "project": entry.project,
    }


def _hit(point: str, data: dict[str, Any], score: float) -> ExperienceHit:
    # Only the hit's own fields: axis, weight, timestamps and anything a later version adds stay behind.
    fields = {key: value for key, value in data.items() if key in ExperienceHit.model_fields}
    # Cosine similarity of normalised vectors is in [-1, 1]; the contract promises [0, 1].
    return ExperienceHit(**{**fields, "id": point, "score": min(1.0, max(0.0, score))})


async def _marked_wrong(run: JobRun, ghap_id: str) -> bool:
    store = await run.services.vectors()
    full = collection_for("full")
    if not await store.collection_exists(full):
        return False
    return any(record.payload.get("wrong") for record in await store.get(full, [point_id(ghap_id, "full")]))


@job(PERSIST_EXPERIENCE)
async def persist_experience(run: JobRun, request: PersistExperienceRequest) -> PersistExperienceResponse:
    entry = request.entry
    resolution = entry.resolution
    if resolution is None:
        raise ValidationError(f"GHAP entry {entry.id} is not resolved; only resolved entries are stored")
    texts = axis_texts(entry, resolution)
    embedder = await run.services.embedder()
    vectors = await embedder.embed(list(texts.values()))  # one call: one batch through the model
    # A person's verdict outlives the experience being stored again (an auto one met anew).
    verdict = {"wrong": True} if await _marked_wrong(run, entry.id) else {}
    for (axis, _), vector in zip(texts.items(), vectors, strict=True):
        store = await run.services.collection(
            CollectionSpec(collection_for(axis), embedder.dimension, INDEXES)
        )
        # Deterministic ids: a retried or duplicated job replaces its points, never adds more.
        await store.upsert(
            collection_for(axis),
            [PointData(point_id(entry.id, axis), vector, payload(entry, resolution, axis) | verdict)],
        )
        # New evidence for the values it lies close to: their weight stops decaying.
        await note_support(store, axis, entry.id, vector, entry.last_seen or resolution.resolved_at)
    # A re-persisted entry that lost its surprise or root cause must not keep the old point there.
    store = await run.services.vectors()
    changed: list[str] = list(texts)
    for axis in ("surprise", "root_cause"):
        if axis not in texts and await store.collection_exists(collection_for(axis)):
            old = point_id(entry.id, axis)
            if await store.get(collection_for(axis), [old]):
                await store.delete(collection_for(axis), [old])
                changed.append(axis)
    axes = list(texts)
    # After the writes: a clustering cached for these axes is out of date from here on.
    await run.services.axis_versions.bump(changed)
    log.info("experience.persisted", ghap_id=entry.id, axes=axes, tier=resolution.confidence_tier)
    return PersistExperienceResponse(ghap_id=entry.id, axes=axes)


async def forget_experience(run: JobRun, ghap_id: str) -> list[str]:
    """Delete an experience's points on every axis (an auto experience no episode holds any more);
    the axes it was on."""
    store = await run.services.vectors()
    removed: list[str] = []
    for axis in AXES:
        old = point_id(ghap_id, axis)
        if await store.collection_exists(collection_for(axis)) and await store.get(
            collection_for(axis), [old]
        ):
            await store.delete(collection_for(axis), [old])
            removed.append(axis)
    await run.services.axis_versions.bump(removed)
    log.info("experience.forgotten", ghap_id=ghap_id, axes=removed)
    return removed


@job(SEARCH_EXPERIENCES)
async def search_experiences(run: JobRun, request: SearchExperiencesRequest) -> SearchExperiencesResponse:
    collection = collection_for(request.axis)
    store = await run.services.vectors()
    # Nothing stored on this axis yet: answer at once, without creating it or waiting for the model.
    if not request.query.strip() or not await store.collection_exists(collection):
        return SearchExperiencesResponse(results=[])
    vector = await query_vector(run, request.query)
    conditions: list[Condition] = []
    if request.domain is not None:
        conditions.append(MatchValue("domain", request.domain))
    if request.outcome is not None:
        conditions.append(MatchValue("outcome_status", request.outcome))
    where = Filter(tuple(conditions))
    ranked = await recall(run, collection, request.query, vector, where=where, adjust=standing)
    # The score is the hybrid relevance (worker.recall.hybrid), by meaning and by words, weighed
    # by the record's standing and by what followed when it was shown before (told beside it).
    # Not collapsed: two experiences alike are two episodes (auto ones met again already merge).
    # A few more than asked: one that did not help may fall behind them.
    read: list[tuple[ContextKind, Candidate]] = [
        ("experience", hit) for hit in ranked[: request.limit + FEEDBACK_SLACK]
    ]
    weighed = (await weigh_what_followed(run, read))[: request.limit]
    results = [
        _hit(hit.id, hit.payload, hit.score).model_copy(
            update={"helped": outcome.helped, "not_helped": outcome.not_helped}
        )
        for _, hit, outcome in weighed
    ]
    return SearchExperiencesResponse(results=results)
