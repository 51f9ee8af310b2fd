"""Stored experiences a page at a time: listed newest first under filters, or searched by meaning
and words on one axis (the ranking search_experiences uses) under the same filters."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from learning_memory.shared.contracts.browse import BrowseExperiencesRequest, BrowseExperiencesResponse
from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.contracts.experiences import ExperienceHit, collection_for
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.capture.feedback import with_outcomes
from learning_memory.worker.recall.hybrid import FUSION, Candidate
from learning_memory.worker.recall.search import query_vector, recall, standing, weigh_what_followed
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Condition, Filter, MatchValue, Range

# How deep a search reads, at most: a page beyond it is empty (a person pages a few deep).
MAX_SEARCH_DEPTH = 500


def experience_filter(request: BrowseExperiencesRequest) -> Filter:
    """The request's filters as the vector store takes them (fields indexed on every axis)."""
    if (
        request.created_from is not None
        and request.created_to is not None
        and request.created_from >= request.created_to
    ):
        raise ValidationError(
            f"created_from ({request.created_from.isoformat()}) must be before created_to "
            f"({request.created_to.isoformat()})"
        )
    conditions: list[Condition] = []
    for key, value in (
        ("project", request.project),
        ("outcome_status", request.outcome),
        ("domain", request.domain),
        ("source", request.source),
    ):
        if value is not None:
            conditions.append(MatchValue(key, value))
    if request.created_from is not None or request.created_to is not None:
        conditions.append(
            Range(
                "created_ts",
                gte=request.created_from.timestamp() if request.created_from else None,
                lt=request.created_to.timestamp() if request.created_to else None,
            )
        )
    return Filter(tuple(conditions))


def experience_record(point: str, payload: dict[str, Any], score: float = 0.0) -> ExperienceHit:
    """The hit a stored point reads as (only the hit's own fields of its payload)."""
    fields = {key: value for key, value in payload.items() if key in ExperienceHit.model_fields}
    return ExperienceHit(**{**fields, "id": point, "score": min(1.0, max(0.0, score))})


async def browse(run: JobRun, request: BrowseExperiencesRequest) -> BrowseExperiencesResponse:
    where = experience_filter(request)
    query = (request.query or "").strip()
    if query:
        return await _search(run, request, query, where)
    collection = collection_for("full")  # every experience has a point there
    store = await run.services.vectors()
    if not await store.collection_exists(collection):
        return BrowseExperiencesResponse(results=[], total=0, offset=request.offset, searched=False)
    page = await store.scroll(
        collection, limit=request.limit, offset=request.offset, filter=where, order_by="created_ts"
    )
    total = await store.count(collection, where)
    hits = [experience_record(point.id, point.payload) for point in page]
    results = await with_outcomes(run.services.settings.data_dir, hits)
    return BrowseExperiencesResponse(results=results, total=total, offset=request.offset, searched=False)


async def _search(
    run: JobRun, request: BrowseExperiencesRequest, query: str, where: Filter
) -> BrowseExperiencesResponse:
    collection = collection_for(request.axis)
    store = await run.services.vectors()
    if not await store.collection_exists(collection):
        return BrowseExperiencesResponse(results=[], total=0, offset=request.offset, searched=True)
    depth = min(max(FUSION.depth, request.offset + request.limit), MAX_SEARCH_DEPTH)
    vector = await query_vector(run, query)
    # Those a person set aside (marked wrong) too: browsing shows them, with their flag.
    ranked = await recall(
        run,
        collection,
        query,
        vector,
        where=where,
        adjust=standing,
        fusion=replace(FUSION, depth=depth),
        curated_out=True,
    )
    # Ranked as search_experiences ranks: relevance by meaning and words, weighed by standing and
    # by what followed when shown before; the whole list at once, so pages never overlap.
    read: list[tuple[ContextKind, Candidate]] = [("experience", hit) for hit in ranked]
    weighed = await weigh_what_followed(run, read)
    page = weighed[request.offset : request.offset + request.limit]
    results = [
        experience_record(hit.id, hit.payload, hit.score).model_copy(
            update={"helped": outcome.helped, "not_helped": outcome.not_helped}
        )
        for _, hit, outcome in page
    ]
    return BrowseExperiencesResponse(
        results=results, total=len(weighed), offset=request.offset, searched=True
    )
