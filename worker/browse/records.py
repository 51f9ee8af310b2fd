"""Reading stored records for the browsing jobs: every point of a collection a page at a time
(only the payload fields asked for), and what a record of each kind reads as in a list."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.browse import AuditItem
from learning_memory.shared.contracts.context import KIND_PREFIXES, ContextKind
from learning_memory.shared.contracts.experiences import collection_for, point_id
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.worker.vectors.base import (
    Condition,
    Filter,
    MatchValue,
    Record,
    VectorStore,
    is_point_id,
)

READ_PAGE = 1_000
TEXT_CHARS = 160
# Where each kind lives, and its payload field that says what it is (experiences: their goal,
# on the full axis, where every experience has a point).
COLLECTIONS: dict[ContextKind, str] = {
    "memory": MEMORIES,
    "experience": collection_for("full"),
    "value": VALUES_COLLECTION,
}
TEXT_FIELDS: dict[ContextKind, str] = {"memory": "content", "experience": "goal", "value": "text"}


def project_filter(project: str | None, *more: Condition) -> Filter:
    return Filter(((MatchValue("project", project),) if project is not None else ()) + more)


async def all_records(
    store: VectorStore, collection: str, where: Filter, fields: Sequence[str]
) -> list[Record]:
    """Every point of ``collection`` that passes ``where``, with only ``fields`` of its payload
    (none if the collection does not exist), read by cursor a page at a time."""
    if not await store.collection_exists(collection):
        return []
    records: list[Record] = []
    async for page in store.pages(collection, size=READ_PAGE, filter=where, payload_fields=fields):
        records += page
    return records


def record_key(kind: ContextKind, record: Record) -> str:
    """The id a record is named by: an experience by its ghap id, the others by their point id."""
    return str(record.payload.get("ghap_id", record.id)) if kind == "experience" else record.id


def audit_item(kind: ContextKind, record: Record) -> AuditItem:
    data: dict[str, Any] = record.payload
    stamp = data.get("created_ts")
    created = (
        datetime.fromtimestamp(stamp, UTC)
        if isinstance(stamp, int | float) and not isinstance(stamp, bool)
        else None
    )
    stale = data.get("stale")
    return AuditItem(
        kind=kind,
        id=record_key(kind, record),
        text=one_line(str(data.get(TEXT_FIELDS[kind]) or ""), TEXT_CHARS),
        created_at=created,
        project=data.get("project"),
        stale=stale if stale in ("changed", "gone") else None,
    )


def split_item(item: str) -> tuple[ContextKind, str] | None:
    """``exp:<id>`` → ("experience", id); None for an id of no known kind."""
    prefix, _, key = item.partition(":")
    kind = KIND_PREFIXES.get(prefix)
    return (kind, key) if kind is not None and key else None


async def items_by_id(store: VectorStore, items: Sequence[str]) -> dict[str, AuditItem]:
    """The records the context ids name, as list items, by context id (those gone left out)."""
    wanted: dict[ContextKind, dict[str, str]] = {}
    for item in items:
        parsed = split_item(item)
        if parsed is not None:
            kind, key = parsed
            point = point_id(key, "full") if kind == "experience" else key
            wanted.setdefault(kind, {})[point] = item
    found: dict[str, AuditItem] = {}
    for kind, points in wanted.items():
        collection = COLLECTIONS[kind]
        if not await store.collection_exists(collection):
            continue
        ids = [p for p in points if is_point_id(p)]
        for record in await store.get(collection, ids):
            found[points[record.id]] = audit_item(kind, record)
    return found
