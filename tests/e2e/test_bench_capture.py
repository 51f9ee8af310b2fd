"""``python -m bench capture`` on the two synthetic sessions: a real server and worker get every
hook call, and the result file says what they answered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.slow, pytest.mark.redis]
REPO = Path(__file__).resolve().parents[2]


def test_the_fixture_sessions_replay_end_to_end(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "capture", "--out", str(tmp_path), "--redis-url", REDIS_URL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "capture.json").read_text())

    assert [t["labelled"] for t in result["transcripts"]] == [True, True]
    first, second = result["sessions"]
    assert first["worktree"] != second["worktree"]  # the failure comes back in another worktree
    assert first["events_by_name"]["PostToolUseFailure"] == 1 and second["events_by_name"]["PreCompact"] == 1
    assert result["totals"]["hook_calls"] == 18
    assert {"hook_prompt_context", "hook_tool_outcome", "hook_file_changed", "hook_stop"} <= set(
        result["latency_ms"]
    )
    # Only tools the server lacks may fail; hooks themselves fail open.
    failing = {tool for tool, summary in result["latency_ms"].items() if summary["errors"]}
    assert failing <= {"hook_session_event"}
    assert first["files"]["created"] >= 1 and second["files"]["created"] >= 3
    scores = result["scores"]
    assert scores["recurring_failures"] == 1 and scores["first_time_failures"] == 1
    assert "episode recall" in done.stdout and "hook_tool_outcome" in done.stdout
