"""Listens on the wake channel and wakes the queue worker an enqueue named."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.cancelling import raise_if_cancelling
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
RETRY_DELAY_S = 1.0


async def listen_for_wakeups(redis: Redis, channel: str, events: Mapping[str, asyncio.Event]) -> None:
    while True:
        pubsub = redis.pubsub()
        try:
            await pubsub.subscribe(channel)
            # A message may have gone by while we were not subscribed: look once anyway.
            for event in events.values():
                event.set()
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    woken = events.get(message["data"].decode())
                    if woken is not None:
                        woken.set()
        except (RedisError, OSError) as exc:
            log.warning("worker.wake_listener_lost", error=str(exc))
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
        # Polling goes on meanwhile at the fallback pace; reconnect without spinning.
        raise_if_cancelling()
        await asyncio.sleep(RETRY_DELAY_S)
