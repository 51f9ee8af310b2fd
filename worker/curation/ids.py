"""The ids a person hands curation, as the stores know them: a context prefix allowed, an
experience by its GHAP id or any of its point ids. What names nothing is a NotFoundError."""

from __future__ import annotations

import uuid

from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.curation import ListChangesRequest
from learning_memory.shared.contracts.experiences import AXES, collection_for
from learning_memory.shared.errors import NotFoundError
from learning_memory.worker.curation.snapshots import Snapshot, experience_points, points
from learning_memory.worker.vectors.base import VectorStore

_PREFIXES = ("mem:", "val:", "exp:")


def bare(identifier: str) -> str:
    text = identifier.strip()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix) :].strip()
    return text


def point_uuid(identifier: str, what: str) -> str:
    """A memory's or a value's point id (a UUID, as the stores take it)."""
    try:
        return str(uuid.UUID(bare(identifier)))
    except ValueError:
        raise NotFoundError(f"No {what} with id {identifier!r}") from None


async def experience(store: VectorStore, identifier: str) -> tuple[str, list[Snapshot]]:
    """The experience's GHAP id and its points; NotFoundError when neither a GHAP id nor a point id
    of one."""
    ghap_id = bare(identifier)
    if ghap_id:
        found = await experience_points(store, ghap_id)
        if found:
            return ghap_id, found
        try:
            point = str(uuid.UUID(ghap_id))
        except ValueError:
            point = ""
        for axis in AXES if point else ():
            for record in await points(store, collection_for(axis), [point]):
                owner = str(record.payload.get("ghap_id", ""))
                if owner and (found := await experience_points(store, owner)):
                    return owner, found
    raise NotFoundError(f"No experience with id {identifier!r} (a GHAP id or a point id)")


def listed_targets(request: ListChangesRequest) -> list[str]:
    """The context ids a listing asks about: as given when prefixed, else the id as any kind."""
    if request.target is None or not request.target.strip():
        return []
    text = request.target.strip()
    if text.startswith(_PREFIXES):
        return [text]
    return [item_id(kind, text) for kind in ("memory", "value", "experience")]
