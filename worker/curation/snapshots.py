"""Records as they were before a change: what the curation log keeps, and how undo puts them back.

A snapshot is one point as it was: its collection, id, payload and vector (base64
of little-endian float32, so JSON carries it and undo needs no model). An experience is one
snapshot per axis it is stored on.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import numpy as np

from learning_memory.shared.contracts.experiences import AXES, collection_for, point_id
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.errors import StorageError
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import PointData, Record, VectorStore

Snapshot = dict[str, Any]
EXPERIENCE_COLLECTIONS = tuple(collection_for(axis) for axis in AXES)
_DTYPE = np.dtype("<f4")


def encode(vector: Sequence[float] | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype=_DTYPE).tobytes()).decode("ascii")


def decode(text: str) -> list[float]:
    return [float(x) for x in np.frombuffer(base64.b64decode(text), dtype=_DTYPE)]


def snapshot(collection: str, record: Record) -> Snapshot:
    return {
        "collection": collection,
        "id": record.id,
        "payload": record.payload,
        "vector": encode(record.vector),
    }


async def points(store: VectorStore, collection: str, ids: Sequence[str]) -> list[Record]:
    """The points among ``ids`` that exist, with their vectors."""
    if not ids or not await store.collection_exists(collection):
        return []
    return await store.get(collection, list(ids), with_vectors=True)


async def experience_points(store: VectorStore, ghap_id: str) -> list[Snapshot]:
    """The experience's points on every axis it is stored on."""
    found: list[Snapshot] = []
    for axis in AXES:
        name = collection_for(axis)
        found += [snapshot(name, record) for record in await points(store, name, [point_id(ghap_id, axis)])]
    return found


async def _vector(run: JobRun, snap: Snapshot) -> list[float]:
    """The snapshot's vector; without one (never written so), the text embedded again."""
    if snap.get("vector"):
        return decode(str(snap["vector"]))
    payload = snap["payload"]
    text = payload.get("content") if snap["collection"] == MEMORIES else None
    if snap["collection"] == VALUES_COLLECTION:
        text = payload.get("text")
    if not isinstance(text, str):
        raise StorageError(f"No vector recorded for point {snap['id']} of {snap['collection']}")
    return [float(x) for x in (await (await run.services.embedder()).embed([text]))[0]]


async def restore(run: JobRun, snaps: Sequence[Snapshot], fields: Sequence[str] = ()) -> None:
    """Put the snapshots' points back as they were. With ``fields``, only those payload fields are
    put back on the points as they are now (a flag undone leaves what changed since alone; a
    point gone since stays gone)."""
    store = await run.services.vectors()
    for snap in snaps:
        collection, point = str(snap["collection"]), str(snap["id"])
        before: dict[str, Any] = snap["payload"]
        if not fields:
            await store.upsert(collection, [PointData(point, await _vector(run, snap), before)])
            continue
        for record in await points(store, collection, [point]):
            payload = dict(record.payload)
            for name in fields:
                if name in before:
                    payload[name] = before[name]
                else:
                    payload.pop(name, None)
            await _put(store, collection, record.id, record.vector, payload)


async def set_fields(store: VectorStore, snaps: Sequence[Snapshot], fields: dict[str, Any]) -> None:
    """Write ``fields`` into the snapshots' payloads (None: the field removed), vectors as they were."""
    for snap in snaps:
        payload = {**snap["payload"], **fields}
        for name, value in fields.items():
            if value is None:
                payload.pop(name, None)
        vector = decode(str(snap["vector"])) if snap.get("vector") else None
        await _put(store, str(snap["collection"]), str(snap["id"]), vector, payload)


async def _put(
    store: VectorStore, collection: str, point: str, vector: Sequence[float] | None, payload: dict[str, Any]
) -> None:
    if vector is None:
        raise StorageError(f"Point {point} of {collection} has no vector to write back")
    await store.upsert(collection, [PointData(point, vector, payload)])
