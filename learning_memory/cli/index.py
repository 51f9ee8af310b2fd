"""``learning-memory index PATH``: index a codebase from a terminal, with a live progress bar.

It drives the public tools, as any client would: ``index_codebase`` (whose progress
notifications draw the bar), then, once the call hands back a job id because indexing
outlasts the tool's wait budget, ``get_job_status`` until the job ends. The project is
searchable then; the bar goes on with the units' vectors, filled in behind the index, as
``list_indexed_projects`` counts them (interrupting leaves them to the worker).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from learning_memory.cli.client import result_payload, stdio_session

POLL_S = 0.5
BAR_WIDTH = 30


class ProgressBar:
    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self._stream = stream
        self._started = time.monotonic()
        self._live = stream.isatty()

    def show(self, current: float, total: float | None, message: str | None, unit: str = "files") -> None:
        elapsed = time.monotonic() - self._started
        if total:
            done = min(1.0, current / total)
            bar = "#" * int(done * BAR_WIDTH)
            line = f"[{bar:<{BAR_WIDTH}}] {current:.0f}/{total:.0f} {unit}"
        else:
            line = f"{current:.0f} {unit}"
        line += f" {message or ''} {elapsed:.0f}s"
        # On a terminal the bar redraws in place; in a log, one line a report.
        self._stream.write(("\r" + line.ljust(100)) if self._live else line + "\n")
        self._stream.flush()

    def close(self) -> None:
        if self._live:
            self._stream.write("\n")


async def _follow_vectors(client: Any, project: str, units: int, bar: ProgressBar) -> None:
    """Until every unit of ``project`` has its vector, drawn as the bar's second part."""
    while True:
        result = await client.call_tool("list_indexed_projects", {})
        listed = result_payload(result).get("projects", []) if not result.is_error else []
        entry = next((p for p in listed if p["project"] == project), None)
        pending = int(entry["vectors_pending"]) if entry else 0
        total = int(entry["units"]) if entry else units
        bar.show(total - pending, total, "units with vectors (searchable already)", unit="units")
        if not pending:
            return
        await asyncio.sleep(POLL_S)


async def run_index(path: str, project: str | None, recursive: bool) -> int:
    directory = await asyncio.to_thread(lambda: Path(path).expanduser().resolve())
    bar = ProgressBar()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        bar.show(progress, total, message)

    name = project or directory.name
    async with stdio_session() as client:
        arguments = {"directory": str(directory), "project": name, "recursive": recursive}
        result = await client.call_tool("index_codebase", arguments, progress_callback=on_progress)
        answer: Any = result_payload(result)
        while not result.is_error and answer.get("status") == "running":
            await asyncio.sleep(POLL_S)
            result = await client.call_tool("get_job_status", {"job_id": answer["job_id"]})
            status = result_payload(result)
            if status.get("progress"):
                progress = status["progress"]
                bar.show(progress["current"], progress.get("total"), progress.get("message"))
            if status.get("state") in ("complete", "failed"):
                answer = status.get("result") or {"error": status.get("error")}
                break
        if not result.is_error and answer.get("vectors_pending"):
            await _follow_vectors(client, name, int(answer["units_indexed"]), bar)
            answer["vectors_pending"] = 0
            answer.pop("note", None)
    bar.close()
    print(json.dumps(answer, indent=2))
    return 1 if result.is_error or "error" in answer else 0
