"""The worker's bounded maps: the least recently used entry goes first, and size 0 keeps none."""

from __future__ import annotations

from learning_memory.worker.lru import Recent


def test_the_least_recently_used_goes_first() -> None:
    kept: Recent[str, int] = Recent(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1  # "b" is now the least recently used
    kept.put("c", 3)
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (1, None, 3)


def test_size_zero_keeps_nothing() -> None:
    kept: Recent[str, int] = Recent(0)
    kept.put("a", 1)
    assert kept.get("a") is None
