"""Each axis's clustering, kept until that axis's experiences change.

What "changed" means is the axis's *fingerprint*: its version (bumped by every persist of an
experience on the axis, see :class:`AxisVersions`) and its point count. The version lives where
every worker sees it: in Redis once the worker is connected to it, so a persist by one worker
makes every other worker's clustering of that axis stale; in the metadata store otherwise
(inline mode, one process). The version is read before the points are, so a write that lands
in between only makes the next call compute again, never keeps a clustering that misses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from learning_memory.worker.learning.clusterer import Cluster

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from learning_memory.shared.keys import Keys
    from learning_memory.worker.metadata.store import MetadataStore


@dataclass(frozen=True)
class Clustering:
    axis: str
    clustering_id: str  # e.g. "full-v12-n1000": the axis's fingerprint when it was computed
    point_ids: list[str]  # the points clustered, by id
    ghap_ids: list[str]  # the same points' experiences
    clusters: list[Cluster]  # by label
    noise_count: int
    dimensions: int  # what hdbscan saw (after any reduction)
    computed_at: datetime
    seconds: float

    @property
    def size(self) -> int:
        return len(self.point_ids)


@dataclass
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    clustering: Clustering | None = None


class ClusteringCache:
    """One clustering per axis; concurrent callers of a stale axis wait for one computation."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.computed = 0  # how many clusterings were computed (tests and logs)

    def current(self, axis: str) -> Clustering | None:
        entry = self._entries.get(axis)
        return entry.clustering if entry else None

    async def get(
        self, axis: str, fingerprint: str, compute: Callable[[str], Awaitable[Clustering]]
    ) -> Clustering:
        """The axis's clustering for ``fingerprint``, computing it (as ``compute(fingerprint)``)
        if the one held is for another."""
        entry = self._entries.setdefault(axis, _Entry())
        held = entry.clustering
        if held is not None and held.clustering_id == fingerprint:
            return held
        async with entry.lock:
            held = entry.clustering
            if held is not None and held.clustering_id == fingerprint:
                return held
            clustering = await compute(fingerprint)
            entry.clustering = clustering
            self.computed += 1
            return clustering


def fingerprint(axis: str, version: int, count: int) -> str:
    return f"{axis}-v{version}-n{count}"


class AxisVersions:
    """Each axis's version: in Redis once :meth:`connect` ed (shared by every worker of the
    namespace), else in the metadata store."""

    def __init__(self, metadata: Callable[[], Awaitable[MetadataStore]]) -> None:
        self._metadata = metadata
        self._redis: Redis | None = None
        self._keys: Keys | None = None

    def connect(self, redis: Redis, keys: Keys) -> None:
        self._redis, self._keys = redis, keys

    async def get(self, axis: str) -> int:
        if self._redis is not None and self._keys is not None:
            raw = await self._redis.get(self._keys.axis_version(axis))
            return int(raw) if raw is not None else 0
        row = await (await self._metadata()).fetchone(
            "SELECT version FROM axis_versions WHERE axis = ?", (axis,)
        )
        return int(row["version"]) if row is not None else 0

    async def bump(self, axes: Iterable[str]) -> None:
        """Mark the axes' experiences as changed (one atomic increment each)."""
        if self._redis is not None and self._keys is not None:
            async with self._redis.pipeline(transaction=False) as pipe:
                for axis in axes:
                    pipe.incr(self._keys.axis_version(axis))
                await pipe.execute()
            return
        await (await self._metadata()).executemany(
            "INSERT INTO axis_versions (axis, version) VALUES (?, 1)"
            " ON CONFLICT (axis) DO UPDATE SET version = version + 1",
            [(axis,) for axis in axes],
        )
