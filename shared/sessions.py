"""Live sessions in Redis: each server renews its entry while it runs, and removes it on exit.

An autostarted worker reads them to know whether anyone may still send it work. Entries are
scored by the wall-clock time they lapse at, so a server that dies without a word (kill -9)
stops counting once its entry lapses.
"""

from __future__ import annotations

import time

from redis.asyncio import Redis

from learning_memory.shared.keys import Keys

# Renewed this often; an entry lapses after SESSION_TTL_S, several renewals later.
SESSION_RENEW_S = 15.0
SESSION_TTL_S = 60.0


async def renew_session(redis: Redis, keys: Keys, session_id: str, *, ttl_s: float = SESSION_TTL_S) -> None:
    now = time.time()
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zadd(keys.sessions, {session_id: now + ttl_s})
        # Entries of servers that died unannounced: whoever renews clears them.
        pipe.zremrangebyscore(keys.sessions, "-inf", now)
        await pipe.execute()


async def end_session(redis: Redis, keys: Keys, session_id: str) -> None:
    await redis.zrem(keys.sessions, session_id)


async def live_sessions(redis: Redis, keys: Keys) -> int:
    """How many sessions have renewed their entry within its lifetime."""
    return int(await redis.zcount(keys.sessions, f"({time.time()}", "+inf"))
