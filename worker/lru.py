"""A bounded map that drops the least recently used entry first: what the worker keeps in memory
per key (embeddings by text, browsing answers by data folder and filter) without growing."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class Recent(Generic[K, T]):
    """At most ``size`` entries (none when ``size`` is 0 or less)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, T] = OrderedDict()

    def get(self, key: K) -> T | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: K, value: T) -> None:
        if self.size <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
