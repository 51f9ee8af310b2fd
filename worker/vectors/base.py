"""The vector store interface every engine implements, and the small filter language it takes.

Both engines (``edge.py``, Qdrant Edge in-process; ``server.py``, a Qdrant server through
``AsyncQdrantClient``) pass one contract test suite. Point ids are UUID strings. Every
failure of the engine is raised as :class:`shared.errors.StorageError`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from learning_memory.shared.errors import StorageError

Vector = Sequence[float] | npt.NDArray[np.float32]
PayloadIndexType = Literal["keyword", "integer", "float", "bool"]
Scalar = str | int | float | bool
_CANONICAL_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class MatchValue:
    """``payload[key] == value``; on a list-valued field, the list contains ``value``."""

    key: str
    value: str | int | bool


@dataclass(frozen=True)
class MatchAny:
    """``payload[key]`` is one of ``values``; on a list-valued field, shares any of them."""

    key: str
    values: tuple[str | int, ...]


@dataclass(frozen=True)
class Range:
    """Numeric bounds on ``payload[key]``; None means unbounded."""

    key: str
    gte: float | None = None
    gt: float | None = None
    lte: float | None = None
    lt: float | None = None


Condition = MatchValue | MatchAny | Range


@dataclass(frozen=True)
class Filter:
    """All conditions must hold (an empty filter matches everything)."""

    must: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class CollectionSpec:
    name: str
    dimension: int
    # Payload fields that filters or ordering use, indexed so that they stay fast.
    indexes: Mapping[str, PayloadIndexType] = field(default_factory=dict)
    # Vectors stored as 16-bit floats: an exact search reads half the bytes, and scores move by
    # ~1e-4. Applies when the collection is created; one made before keeps its 32-bit vectors.
    half_precision: bool = False


@dataclass(frozen=True)
class PointData:
    id: str
    vector: Vector
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class Record:
    id: str
    payload: dict[str, Any]
    vector: list[float] | None = None


@dataclass(frozen=True)
class ScoredRecord:
    id: str
    score: float
    payload: dict[str, Any]


class VectorStore(Protocol):
    async def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection (and its payload indexes) on first use.

        Raises StorageError when it exists with another dimension, saying how to re-index.
        """

    async def collection_exists(self, name: str) -> bool: ...

    async def upsert(self, collection: str, points: Sequence[PointData]) -> None:
        """Insert or replace points by id (idempotent: a retried job never duplicates)."""

    async def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The points that exist among ``ids``, in the order of ``ids``."""

    async def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""

    async def delete_by_filter(self, collection: str, filter: Filter) -> None:
        """Delete every point that matches ``filter`` (an empty filter matches, and deletes, all)."""

    async def search(
        self,
        collection: str,
        vector: Vector,
        *,
        limit: int,
        filter: Filter | None = None,
        with_payload: bool = True,
    ) -> list[ScoredRecord]:
        """Nearest points by cosine similarity, best first; without ``with_payload``, their
        payloads are left empty (callers that keep payloads elsewhere skip their decoding)."""

    async def scroll(
        self,
        collection: str,
        *,
        limit: int,
        offset: int = 0,
        filter: Filter | None = None,
        order_by: str | None = None,
        descending: bool = True,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> list[Record]:
        """A page of matching points: ``offset`` skips that many, ordered by the numeric payload
        field ``order_by`` (which must be indexed) when given, else by id; with their vectors
        when ``with_vectors``; with only the payload fields ``payload_fields`` when given."""

    def pages(
        self,
        collection: str,
        *,
        size: int,
        filter: Filter | None = None,
        with_vectors: bool = False,
        payload_fields: Sequence[str] | None = None,
    ) -> AsyncIterator[list[Record]]:
        """Every matching point once, by id, ``size`` at a time. Each page starts at the point where
        the last one ended (a cursor), so reading a whole collection costs one pass; a numeric
        ``offset`` makes the engine step over every earlier point again for each page."""

    async def count(self, collection: str, filter: Filter | None = None) -> int:
        """Exact number of matching points."""

    async def close(self) -> None:
        """Flush and release the store (for Qdrant Edge: its folder lock)."""


def is_point_id(value: str) -> bool:
    """Whether ``value`` names a point at all (a UUID): anything else would be refused."""
    try:
        point_id(value)
    except StorageError:
        return False
    return True


def point_id(value: str) -> str:
    """The canonical UUID string engines take; StorageError if ``value`` is no UUID."""
    if _CANONICAL_UUID.match(value):  # most ids: 6x cheaper than parsing
        return value
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise StorageError(f"Point id {value!r} is not a UUID") from None
