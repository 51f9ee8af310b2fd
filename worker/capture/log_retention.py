"""How long a session's log is kept: ``LMS_CAPTURE_KEEP_DAYS`` after its last event.

What was learned from a log lives in the fix index and the vector store, not in the log: by the
time a log is that old, every trigger of its session (Stop, PreCompact, SessionEnd, the next
prompt) has mined it. Pruning runs after each mining, over that project's logs only.
"""

from __future__ import annotations

import time
from pathlib import Path

from learning_memory.shared.log import get_logger

log = get_logger(__name__)
DAY_S = 86_400


def prune_logs(sessions: Path, keep_days: int, *, keep: Path | None = None, now: float | None = None) -> int:
    """Delete the session logs in ``sessions`` untouched for ``keep_days`` (``keep``, the log
    just mined, stays whatever its age); how many were deleted. Blocking: off the event loop."""
    cutoff = (time.time() if now is None else now) - keep_days * DAY_S
    removed = 0
    for path in sessions.glob("*.jsonl"):
        if keep is not None and path == keep:
            continue
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # another worker pruned it first
            continue
    if removed:
        log.info("capture.logs_pruned", folder=str(sessions), removed=removed, keep_days=keep_days)
    return removed
