"""Each repository's commit watermark: the last indexed HEAD and the oldest date covered.

In the worker's metadata store, or, with shared state (``LMS_SHARED_STATE``), in Redis once
:meth:`Watermarks.connect` ed: the commits' points are then on a Qdrant server every worker uses,
and a watermark kept by one worker alone would have another index the whole history again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from redis.asyncio import Redis

from learning_memory.shared.keys import Keys

if TYPE_CHECKING:
    from learning_memory.worker.metadata.store import MetadataStore

# (last indexed HEAD, oldest date covered or None for all)
Watermark = tuple[str | None, float | None]


class Watermarks:
    def __init__(self, metadata: Callable[[], Awaitable[MetadataStore]]) -> None:
        self._metadata = metadata
        self._redis: tuple[Redis, Keys] | None = None

    def connect(self, redis: Redis, keys: Keys) -> None:
        self._redis = (redis, keys)

    async def get(self, repo: str) -> Watermark | None:
        """None when the repository was never indexed (or its index was forgotten)."""
        if self._redis is not None:
            redis, keys = self._redis
            raw = await cast(Awaitable[dict[bytes, bytes]], redis.hgetall(keys.commit_watermark(repo)))
            if not raw:
                return None
            fields = {key.decode(): value.decode() for key, value in raw.items()}
            return fields.get("last_commit") or None, _float(fields.get("since_ts"))
        row = await (await self._metadata()).fetchone(
            "SELECT last_commit, since_ts FROM commit_watermarks WHERE repo = ?", (repo,)
        )
        if row is None:
            return None
        since = row["since_ts"]
        return row["last_commit"], None if since is None else float(since)

    async def set(self, repo: str, head: str, floor: float | None) -> None:
        now = time.time()
        if self._redis is not None:
            redis, keys = self._redis
            key = keys.commit_watermark(repo)
            mapping: dict[str, Any] = {
                "last_commit": head,
                "indexed_at": now,
                "since_ts": "" if floor is None else floor,
            }
            async with redis.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                pipe.hset(key, mapping=mapping)
                await pipe.execute()
            return
        await (await self._metadata()).execute(
            "INSERT OR REPLACE INTO commit_watermarks (repo, last_commit, indexed_at, since_ts)"
            " VALUES (?, ?, ?, ?)",
            (repo, head, now, floor),
        )

    async def forget(self, repo: str) -> None:
        if self._redis is not None:
            redis, keys = self._redis
            await redis.delete(keys.commit_watermark(repo))
            return
        await (await self._metadata()).execute("DELETE FROM commit_watermarks WHERE repo = ?", (repo,))


def _float(value: str | None) -> float | None:
    return float(value) if value else None
