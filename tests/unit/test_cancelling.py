"""A loop that catches errors to keep going still stops when its task is cancelled, even if a
library turned the cancellation into one of those errors."""

from __future__ import annotations

import asyncio

import pytest

from learning_memory.shared.cancelling import raise_if_cancelling, wait_set


async def _swallowing_loop(rounds: list[int]) -> None:
    while True:
        try:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                # What redis-py's timeouts can do on Python 3.11: the cancellation comes out as
                # TimeoutError, which a loop that survives a Redis outage catches.
                raise TimeoutError from None
        except OSError:
            rounds.append(1)
        raise_if_cancelling()


async def test_a_cancellation_turned_into_an_error_still_stops_the_loop() -> None:
    rounds: list[int] = []
    task = asyncio.create_task(_swallowing_loop(rounds))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert rounds == [1]


async def test_nothing_happens_when_the_task_was_not_cancelled() -> None:
    raise_if_cancelling()


async def test_wait_set_says_whether_the_event_came_and_lets_a_cancellation_through() -> None:
    event = asyncio.Event()
    assert await wait_set(event, 0.01) is False
    event.set()
    assert await wait_set(event, 5) is True
    # Cancelled as the event is set: the cancellation still ends the task.
    event.clear()
    task = asyncio.create_task(wait_set(event, 5))
    await asyncio.sleep(0)
    event.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
