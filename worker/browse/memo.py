"""The heavier browsing answers (the audit, the overview's counts) kept for a minute while the
store stays as it was, so that a page read again, or by a second tab, does not recompute them.

"As it was": the same number of records of each kind and no curation change since. A change that
moves no count (a stale mark) shows within the minute; a person's own correction, at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from learning_memory.worker.browse.records import COLLECTIONS
from learning_memory.worker.curation.log import log_path
from learning_memory.worker.services import JobRun

T = TypeVar("T")
MAX_AGE_S = 60.0


@dataclass
class _Kept:
    key: tuple[Any, ...]
    at: float
    value: Any


_KEPT: dict[str, _Kept] = {}


async def store_state(run: JobRun) -> tuple[Any, ...]:
    store = await run.services.vectors()
    counts = [
        await store.count(collection) if await store.collection_exists(collection) else 0
        for collection in COLLECTIONS.values()
    ]
    log = log_path(run.services.settings.data_dir)
    changed = [path.stat().st_mtime_ns for path in (log, log.with_name(log.name + "-wal")) if path.exists()]
    return (str(run.services.settings.data_dir), *counts, max(changed, default=0))


async def kept(run: JobRun, name: str, asked: Any, compute: Callable[[], Awaitable[T]]) -> T:
    """``compute()``'s answer to ``asked``, or the one kept from less than a minute ago while the
    store is as it was then."""
    key = (asked, await store_state(run))
    found = _KEPT.get(name)
    if found is not None and found.key == key and time.monotonic() - found.at < MAX_AGE_S:
        value: T = found.value
        return value
    value = await compute()
    _KEPT[name] = _Kept(key, time.monotonic(), value)
    return value
