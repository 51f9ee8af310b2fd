"""The worker's memory over a run, split as the kernel counts it.

``VmHWM`` (the peak resident set) counts two kinds of pages: the worker's own (``RssAnon``: the
model, arrays, Python objects) and pages of files it maps (``RssFile``: the vector store's
segments and write-ahead logs, shared libraries), which are page cache the kernel drops under
pressure. The kernel keeps no peak per kind, so a task samples both while the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench.common import progress

FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")
EVERY_S = 0.2


def read_mib(pid: int) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in FIELDS:
            found[key] = int(line.split()[1]) / 1024
    return found


class MemoryWatch:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_anon_mib = 0.0
        self.peak_file_mib = 0.0
        self.phases: dict[str, dict[str, float]] = {}

    def sample(self) -> dict[str, float]:
        now = read_mib(self.pid)
        self.peak_anon_mib = max(self.peak_anon_mib, now.get("RssAnon", 0.0))
        self.peak_file_mib = max(self.peak_file_mib, now.get("RssFile", 0.0))
        return now

    def after(self, phase: str) -> None:
        """Record where the worker stands once ``phase`` is done (and the peaks so far)."""
        now = self.sample()
        self.phases[phase] = {**now, "peak RssAnon": self.peak_anon_mib, "peak RssFile": self.peak_file_mib}
        shown = ", ".join(f"{key} {value:.0f}" for key, value in self.phases[phase].items())
        progress(f"scale: worker after {phase} (MiB): {shown}")

    def summary(self) -> dict[str, Any]:
        final = self.sample()
        return {
            "peak_rss_mib": final.get("VmHWM"),
            "peak_anon_mib": self.peak_anon_mib,
            "peak_file_mib": self.peak_file_mib,
            "by_phase": self.phases,
        }


@contextlib.asynccontextmanager
async def watching(pid: int) -> AsyncIterator[MemoryWatch]:
    watch = MemoryWatch(pid)

    async def poll() -> None:
        while True:
            with contextlib.suppress(OSError):  # the worker may be gone at the very end
                watch.sample()
            await asyncio.sleep(EVERY_S)

    task = asyncio.create_task(poll())
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
