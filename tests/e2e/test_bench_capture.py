"""``python -m bench capture`` on the two synthetic sessions: a real server and worker get every
hook call, and the result file says what they answered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.capture.hooks import HOOKS_JSON, calls_for, load_hooks
from bench.capture.transcripts import read_transcript
from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.slow, pytest.mark.redis]
REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "tests" / "fixtures" / "transcripts").glob("*.jsonl"))


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
    hooks = load_hooks(HOOKS_JSON)
    expected = [
        c.tool for path in FIXTURES for e in read_transcript(path).events for c in calls_for(hooks, e.input)
    ]
    assert result["totals"]["hook_calls"] == len(expected)
    assert {"hook_prompt_context", "hook_tool_outcome", "hook_file_changed", "hook_stop"} <= set(
        result["latency_ms"]
    )
    # Hooks fail open: no hook tool the server has answers an error.
    assert all(summary["errors"] == 0 for summary in result["latency_ms"].values()), result["latency_ms"]
    assert first["files"]["created"] >= 1 and second["files"]["created"] >= 3
    scores = result["scores"]
    assert scores["recurring_failures"] == 1 and scores["first_time_failures"] == 1
    assert "episode recall" in done.stdout and "hook_tool_outcome" in done.stdout
