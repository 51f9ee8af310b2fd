"""The strongest values, kept in a file for the SessionStart brief.

The brief runs before Claude Code connects to the server and must not wait for a worker, so
the server writes the values it learns of (at start when a worker holds the store, and after
every store_value) where the brief can read them: ``<data dir>/cache/values.json``, replaced atomically.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from learning_memory.server.hooks.session_brief import MAX_VALUES, VALUES_CACHE
from learning_memory.server.journal.files import atomic_write
from learning_memory.server.transport import JobStillRunning, Transport
from learning_memory.shared.contracts.learning import LIST_VALUES, ListValuesRequest, ValueRecord
from learning_memory.shared.errors import LmsError
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings

log = get_logger(__name__)
FIELDS = ("id", "text", "axis", "cluster_id", "cluster_size", "created_at")


def write_values_cache(data_dir: Path, values: list[ValueRecord]) -> None:
    """``values`` in list_values order (largest clusters first); the first few are kept."""
    path = data_dir / VALUES_CACHE
    rows = [value.model_dump(mode="json", include=set(FIELDS)) for value in values[:MAX_VALUES]]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic (the brief reads the old list or the new), not durable: a cache, rebuilt at start.
        atomic_write(path, json.dumps(rows).encode(), durable=False)
    except OSError as exc:  # only the brief is poorer for it
        log.warning("values_cache.write_failed", path=str(path), error=str(exc))


async def refresh_values_file(jobs: Transport, settings: Settings) -> None:
    """Ask the worker for the strongest values and keep them for the brief (the server after
    store_value, the web view after a value is retired or restored); on failure the old file
    stays (a stale brief beats none)."""
    try:
        found = await jobs.run(
            LIST_VALUES, ListValuesRequest(limit=MAX_VALUES), budget_s=settings.tool_wait_s
        )
    except (LmsError, JobStillRunning) as exc:
        log.info("values_cache.not_refreshed", reason=str(exc))
        return
    await asyncio.to_thread(write_values_cache, settings.data_dir, found.results)
