"""This server's entry among the live sessions, for as long as it runs.

An autostarted worker stays while any session lives. The entry is written before the server
checks for a live worker: a worker deciding to leave reads the sessions last, so either it sees
this one and stays, or this server finds it gone and starts another.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.sessions import SESSION_RENEW_S, end_session, renew_session

log = get_logger(__name__)
# Leaving must not hold a server's shutdown on a Redis that stopped answering.
END_TIMEOUT_S = 1.0


async def keep_session(
    redis: Redis,
    keys: Keys,
    then: Callable[[], Awaitable[object]],
    *,
    renew_s: float = SESSION_RENEW_S,
) -> None:
    """Register, run ``then`` (start a worker if none lives), renew until cancelled, then leave."""
    session_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    started = False
    try:
        while True:
            try:
                await renew_session(redis, keys, session_id)
            except (RedisError, OSError) as exc:  # Redis away: jobs fail with their own message
                log.warning("session.renew_failed", error=str(exc))
            if not started:
                started = True
                await then()
            await asyncio.sleep(renew_s)
    finally:
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            await asyncio.wait_for(end_session(redis, keys, session_id), END_TIMEOUT_S)
