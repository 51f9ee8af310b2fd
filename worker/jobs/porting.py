"""Export and import jobs: a page of one kind's records as stored, and a batch of them stored back.

Records go back with the ids and payloads they left with, through the same store the tools write
to (so their keyword rows are written as a stored record's are, see ``worker.recall.mirror``),
into collections made with the same payload indexes; anchored memories and values are put in
the fix index as storing them does. A record whose id is in the store already is left as it is:
importing twice changes nothing, and an import never rolls back what the store learned since.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pydantic

from learning_memory.shared.anchored_items import put_item
from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.context import ContextKind, item_id
from learning_memory.shared.contracts.experiences import (
    AXES,
    Anchor,
    Axis,
    GhapEntry,
    Resolution,
    collection_for,
    point_id,
)
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.contracts.porting import (
    EXPORT_ITEMS,
    IMPORT_ITEMS,
    ExperienceLine,
    ExportItemsRequest,
    ExportItemsResponse,
    ImportItemsRequest,
    ImportItemsResponse,
    MemoryLine,
    PortedPoint,
    StoredItem,
    ValueLine,
    decode_vector,
    encode_vector,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.worker.embedding.base import Embedder
from learning_memory.worker.jobs import experiences, learning, memory
from learning_memory.worker.jobs.experiences import axis_texts
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    MatchValue,
    PayloadIndexType,
    PointData,
    Record,
    Vector,
    VectorStore,
)

log = get_logger(__name__)

FULL = collection_for("full")  # every experience has a point here: it pages the experiences
ANCHORED_TEXT_CHARS = memory.ANCHORED_TEXT_CHARS


def _collection(kind: str) -> str:
    return {"memory": MEMORIES, "value": VALUES_COLLECTION}.get(kind, FULL)


def _indexes(collection: str) -> dict[str, PayloadIndexType]:
    if collection == MEMORIES:
        return memory.INDEXES
    return learning.VALUE_INDEXES if collection == VALUES_COLLECTION else experiences.INDEXES


def _point(record: Record) -> PortedPoint:
    vector = encode_vector(record.vector) if record.vector is not None else None
    return PortedPoint(id=record.id, payload=record.payload, vector=vector)


async def _experience_lines(store: VectorStore, page: list[Record], with_vectors: bool) -> list[StoredItem]:
    """Each experience of ``page`` (its full-axis points) with its points on the other axes."""
    ghap_ids = [str(record.payload.get("ghap_id", "")) for record in page]
    by_axis: dict[str, dict[str, Record]] = {}
    for axis in AXES[1:]:
        if await store.collection_exists(collection_for(axis)):
            ids = [point_id(ghap_id, axis) for ghap_id in ghap_ids]
            read = await store.get(collection_for(axis), ids, with_vectors=with_vectors)
            by_axis[axis] = {record.id: record for record in read}
    lines: list[StoredItem] = []
    for ghap_id, record in zip(ghap_ids, page, strict=True):
        axes: dict[Axis, PortedPoint] = {"full": _point(record)}
        for axis, found in by_axis.items():
            if (other := found.get(point_id(ghap_id, axis))) is not None:
                axes[axis] = _point(other)  # type: ignore[index]
        lines.append(ExperienceLine(id=ghap_id, axes=axes))
    return lines


@job(EXPORT_ITEMS)
async def export_items(run: JobRun, request: ExportItemsRequest) -> ExportItemsResponse:
    store = await run.services.vectors()
    collection = _collection(request.kind)
    model = run.services.settings.embedding_model
    if not await store.collection_exists(collection):
        return ExportItemsResponse(items=[], next_offset=None, total=0, embedding_model=model, dimension=None)
    if request.kind == "experience" and request.ghap_ids is not None:
        ids = [point_id(ghap_id, "full") for ghap_id in request.ghap_ids]
        page = await store.get(collection, ids, with_vectors=request.with_vectors)
        total, more = len(page), False
    else:
        where = Filter((MatchValue("project", request.project),) if request.project else ())
        total = await store.count(collection, where)
        page = await store.scroll(
            collection,
            limit=request.limit,
            offset=request.offset,
            filter=where,
            with_vectors=request.with_vectors,
        )
        more = len(page) == request.limit
    items: list[StoredItem]
    if request.kind == "experience":
        items = await _experience_lines(store, page, request.with_vectors)
    else:
        line = MemoryLine if request.kind == "memory" else ValueLine
        items = [line(**_point(record).model_dump()) for record in page]
    dimension = next((len(r.vector) for r in page if r.vector is not None), None)
    return ExportItemsResponse(
        items=items,
        next_offset=request.offset + len(page) if more else None,
        total=total,
        embedding_model=model,
        dimension=dimension,
    )


# --- import --------------------------------------------------------------------------


def _experience_text(axis: str, payload: dict[str, Any]) -> str:
    """The text an experience's point on ``axis`` was embedded from, rebuilt from its payload as
    persisting it builds it from the journal's entry."""
    try:
        resolution = Resolution(
            status=payload["outcome_status"],
            result=payload["outcome_result"],
            surprise=payload.get("surprise"),
            root_cause=payload.get("root_cause"),
            lesson=payload.get("lesson"),
            confidence_tier=payload["confidence_tier"],
            resolved_at=payload["resolved_at"],
            resolved_in_session="",
        )
        entry = GhapEntry(
            id=str(payload["ghap_id"]),
            session_id="",
            domain=payload["domain"],
            strategy=payload["strategy"],
            goal=payload["goal"],
            hypothesis=payload["hypothesis"],
            action=payload["action"],
            prediction=payload["prediction"],
            created_at=payload["created_at"],
            updated_at=payload["resolved_at"],
        )
    except (KeyError, pydantic.ValidationError) as exc:
        raise ValidationError(f"an experience's {axis} point is not a stored experience: {exc}") from None
    text = axis_texts(entry, resolution).get(axis)  # type: ignore[call-overload]
    if text is None:
        raise ValidationError(f"experience {entry.id} has nothing to embed on axis {axis}")
    return str(text)


def _text(collection: str, payload: dict[str, Any]) -> str:
    if collection == MEMORIES:
        text = payload.get("content")
    elif collection == VALUES_COLLECTION:
        text = payload.get("text")
    else:
        return _experience_text(collection.removeprefix("experiences_"), payload)
    if not isinstance(text, str) or not text.strip():
        field = "content" if collection == MEMORIES else "text"
        raise ValidationError(f"a {collection} record has no {field} to embed")
    return text


class _Pending:
    """The points one import writes, by collection; those without a usable vector get one from
    their text, in one call to the model."""

    def __init__(self, reuse_vectors: bool, dimension: int) -> None:
        self.reuse = reuse_vectors
        self.dimension = dimension
        self.points: dict[str, list[tuple[PortedPoint, Vector | None]]] = {}
        self.texts: list[tuple[str, int, str]] = []  # (collection, index in its points, text)

    def add(self, collection: str, point: PortedPoint) -> None:
        vector: list[float] | None = None
        if self.reuse and point.vector is not None:
            vector = decode_vector(point.vector)
            if len(vector) != self.dimension:
                raise ValidationError(
                    f"point {point.id} has a vector of {len(vector)} numbers; "
                    f"this model makes {self.dimension}"
                )
        points = self.points.setdefault(collection, [])
        if vector is None:
            self.texts.append((collection, len(points), _text(collection, point.payload)))
        points.append((point, vector))

    async def embed(self, embedder: Embedder) -> None:
        if not self.texts:
            return
        vectors = await embedder.embed([text for _, _, text in self.texts])
        for (collection, index, _), vector in zip(self.texts, vectors, strict=True):
            self.points[collection][index] = (self.points[collection][index][0], vector)


async def _missing(store: VectorStore, collection: str, ids: Sequence[str]) -> set[str]:
    if not ids or not await store.collection_exists(collection):
        return set(ids)
    return set(ids) - {record.id for record in await store.get(collection, ids)}


async def _anchor(run: JobRun, collection: str, points: list[tuple[PortedPoint, Vector | None]]) -> None:
    """Memories and values anchored to a project's files go into the fix index, as when stored."""
    if collection not in (MEMORIES, VALUES_COLLECTION):
        return
    kind: ContextKind = "memory" if collection == MEMORIES else "value"
    index = fix_index_path(run.services.settings.data_dir)
    for point, _ in points:
        data = point.payload
        project, anchors = data.get("project"), data.get("anchors") or []
        if not isinstance(project, str) or not anchors:
            continue
        try:
            found = [Anchor.model_validate(anchor) for anchor in anchors]
        except pydantic.ValidationError as exc:
            raise ValidationError(f"{kind} {point.id} has unreadable anchors: {exc}") from None
        text = str(data.get("content") or data.get("text") or "")
        if kind == "memory":
            text = one_line(text, ANCHORED_TEXT_CHARS)
        at = _when(data.get("created_at"))
        await asyncio.to_thread(put_item, index, project, item_id(kind, point.id), found, text, at)


def _when(value: Any) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise ValidationError(f"a record's created_at {value!r} is not a time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _key(item: StoredItem) -> str:
    """The id that tells whether the store has the item: an experience's is its full-axis point."""
    return point_id(item.id, "full") if isinstance(item, ExperienceLine) else item.id


@job(IMPORT_ITEMS)
async def import_items(run: JobRun, request: ImportItemsRequest) -> ImportItemsResponse:
    embedder = await run.services.embedder()
    store = await run.services.vectors()
    same_model = request.embedding_model == run.services.settings.embedding_model
    pending = _Pending(same_model and request.dimension == embedder.dimension, embedder.dimension)
    imported = 0
    for collection, items in _by_collection(request.items).items():
        missing = await _missing(store, collection, [_key(item) for item in items])
        for item in items:
            if _key(item) not in missing:
                continue
            missing.discard(_key(item))  # twice in one batch: the second is present
            imported += 1
            if isinstance(item, ExperienceLine):
                for axis, point in item.axes.items():
                    pending.add(collection_for(axis), point)
            else:
                pending.add(collection, item)
    await pending.embed(embedder)
    for collection, points in pending.points.items():
        spec = CollectionSpec(collection, embedder.dimension, _indexes(collection))
        writer = await run.services.collection(spec)
        await writer.upsert(collection, [PointData(p.id, v, p.payload) for p, v in points if v is not None])
        await _anchor(run, collection, points)
    axes = [c.removeprefix("experiences_") for c in pending.points if c.startswith("experiences_")]
    if axes:
        # After the writes: a clustering cached for these axes is out of date from here on.
        await run.services.axis_versions.bump(axes)
    present, embedded = len(request.items) - imported, len(pending.texts)
    log.info("porting.imported", imported=imported, present=present, re_embedded=embedded)
    return ImportItemsResponse(imported=imported, present=present, re_embedded=embedded)


def _by_collection(items: Sequence[StoredItem]) -> dict[str, list[StoredItem]]:
    grouped: dict[str, list[StoredItem]] = {}
    for item in items:
        grouped.setdefault(_collection(item.kind), []).append(item)
    return grouped
