"""``python -m bench porting`` at tiny sizes: a store seeded through the real paths, exported and
imported, and the result file holds each measure's throughput."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.slow, pytest.mark.redis]
REPO = Path(__file__).resolve().parents[2]
MEASURES = {
    "export",
    "export with vectors",
    "import with vectors (into an empty store)",
    "import again (every record present)",
    "import embedding every text again",
}


def test_the_porting_bench_runs_at_tiny_sizes(tmp_path: Path) -> None:
    sizes = ["--experiences", "30", "--memories", "20"]
    done = subprocess.run(
        [sys.executable, "-m", "bench", "porting", *sizes, "--out", str(tmp_path), "--redis-url", REDIS_URL],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "porting.json").read_text())["rows"]
    assert {row["what"] for row in rows} == MEASURES
    # 20 memories, 30 experiences and their 30 archived GHAP entries, each way.
    assert all(row["records"] == 80 and row["records_per_s"] > 0 for row in rows)
    assert "import again (every record present)" in done.stdout
