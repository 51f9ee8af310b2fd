"""Gives indexed code units their transformer vectors, in the background.

``index_codebase`` makes a project searchable as soon as its files are parsed: each unit's
keyword row (with its payload) is written at once, marked as waiting for its vector, and search
answers from BM25 and the code-aware ranking meanwhile. The transformer takes far longer than
parsing, so its vectors are filled in here afterwards, a batch at a time, oldest rows first;
dense search (and so meaning-based matches) covers each unit as soon as its point is written.

A batch is embedded without holding anything, then written under the project's lock, and only
for the rows still waiting: a file re-indexed or a project deleted meanwhile has replaced or
removed them, and its units must not come back. Everything it needs is in the metadata store,
so a killed worker simply leaves rows waiting, and the next one to start fills them.

While an index run of the same worker is parsing and writing, the filler waits between rounds
(:meth:`VectorFiller.paused`): on two cores the model would take the CPU that makes a project
searchable, and the vectors are only wanted once the keywords answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from itertools import groupby
from typing import TYPE_CHECKING

from learning_memory.shared.cancelling import raise_if_cancelling, wait_set
from learning_memory.shared.contracts.code import COLLECTION
from learning_memory.shared.log import get_logger
from learning_memory.worker.allocator import give_back
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.units import collection_spec
from learning_memory.worker.vectors.base import PointData

if TYPE_CHECKING:
    from learning_memory.worker.services import WorkerServices

log = get_logger(__name__)

BATCH = 64  # units embedded per round: one round's write waits behind a search for little
RETRY_AFTER_S = 30.0  # after a failed round (the model would not load, the store refused)


class VectorFiller:
    """One per :class:`~worker.services.WorkerServices`; :meth:`wake` after writing rows."""

    def __init__(self, services: WorkerServices) -> None:
        self._services = services
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._holds = 0
        self._free = asyncio.Event()
        self._free.set()
        self._failing = False

    def wake(self) -> None:
        """There may be rows waiting: fill them (starts the background task if needed)."""
        self._idle.clear()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="code-vector-filler")

    @property
    def busy(self) -> bool:
        """Rows wait for their vectors and the last round did not fail (a store or model that keeps
        failing must not keep an autostarted worker alive for ever)."""
        running = self._task is not None and not self._task.done()
        return running and not self._idle.is_set() and not self._failing

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No round starts inside this block (a round already started finishes)."""
        self._holds += 1
        self._free.clear()
        try:
            yield
        finally:
            self._holds -= 1
            if self._holds == 0:
                self._free.set()

    async def wait_idle(self, timeout_s: float) -> None:
        """Until no row waits (as of the last wake); raises TimeoutError after ``timeout_s``."""
        if self._task is None or self._task.done():
            self.wake()
        await asyncio.wait_for(self._idle.wait(), timeout_s)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._free.wait()
            self._wake.clear()
            try:
                filled = await self.fill_round()
                self._failing = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failing = True
                log.warning("code_vectors_fill_failed", error=f"{type(exc).__name__}: {exc}")
                raise_if_cancelling()
                await wait_set(self._wake, RETRY_AFTER_S)
                continue
            if not filled and not self._wake.is_set():
                self._idle.set()
                give_back()  # the batches' texts, tokens and arrays are freed: return them
                await self._wake.wait()

    async def fill_round(self) -> int:
        """Embed and write one batch of waiting units; how many were written (0: none waits)."""
        services = self._services
        metadata = await services.metadata()
        rows = await unit_store.pending(metadata, BATCH)
        if not rows:
            return 0
        embedder = await services.embedder()
        vectors = await embedder.embed([row.text for row in rows])
        store = await services.collection(collection_spec(embedder.dimension))
        written = 0
        pairs = sorted(zip(rows, vectors, strict=True), key=lambda pair: pair[0].project)
        for project, group in groupby(pairs, key=lambda pair: pair[0].project):
            batch = list(group)
            async with services.locks.hold("code", project):
                waiting = await unit_store.still_pending(metadata, [row for row, _ in batch])
                points = [
                    PointData(row.point_id, vector, row.payload)
                    for row, vector in batch
                    if row.rowid in waiting
                ]
                if points:
                    await store.upsert(COLLECTION, points)
                await unit_store.mark_embedded(metadata, sorted(waiting))
            written += len(points)
        return written
