"""``python -m bench scale`` at tiny sizes: one data folder seeded through the real paths, every
hook, start_ghap and get_clusters timed, and the result file says what was measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.slow, pytest.mark.redis]
REPO = Path(__file__).resolve().parents[2]
HOOKS = {
    "hook_prompt_context",
    "hook_tool_outcome",
    "hook_file_read",
    "hook_file_changed",
    "hook_stop",
    "hook_session_event",
}


def test_the_scale_bench_runs_at_tiny_sizes(tmp_path: Path) -> None:
    sizes = ["--experiences", "50", "--memories", "20", "--code-units", "200", "--calls", "3", "--cold", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "bench", "scale", *sizes, "--out", str(tmp_path), "--redis-url", REDIS_URL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "scale.json").read_text())

    timed = HOOKS | {"start_ghap", "get_clusters full (cold)", "get_clusters full (cached)"}
    assert timed <= set(result["tools"])
    assert result["seeding"]["code"]["units"] >= 200
    assert result["store_mib"] > 0 and result["worker_memory"]["peak_rss_mib"] > 0
    assert set(result["worker_memory"]["by_phase"]) >= {"experiences", "code", "get_clusters"}
    assert "worker peak RSS" in result["pass"]
    assert "worker peak RSS (VmHWM)" in done.stdout
