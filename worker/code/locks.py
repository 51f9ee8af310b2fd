"""One lock per project per worker process: two writers on one project's rows and points would race.

Indexing, re-indexing a file, deleting a project and writing filled-in vectors all take it. The
server also submits index jobs with a job id per project; this is the backstop. Keyed by
services, so each test's event loop gets fresh locks.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.context import WorkerServices

_LOCKS: weakref.WeakKeyDictionary[WorkerServices, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()


def project_lock(services: WorkerServices, project: str) -> asyncio.Lock:
    return _LOCKS.setdefault(services, {}).setdefault(project, asyncio.Lock())
