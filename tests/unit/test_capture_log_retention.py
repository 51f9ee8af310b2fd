"""Session logs are kept LMS_CAPTURE_KEEP_DAYS after their last event, then deleted at the next
mining of their project; the log just mined stays whatever its age."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from learning_memory.shared.settings import ConfigError, load_settings
from learning_memory.worker.capture.log_retention import DAY_S, prune_logs


def _log(folder: Path, name: str, age_days: float, now: float) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text('{"id": "e1"}\n')
    moment = now - age_days * DAY_S
    os.utime(path, (moment, moment))
    return path


def test_old_logs_go_recent_ones_and_the_one_mined_stay(tmp_path: Path) -> None:
    now = time.time()
    old, recent, mined = (
        _log(tmp_path, n, age, now) for n, age in (("old", 91), ("recent", 89), ("mined", 400))
    )
    other = tmp_path / "notes.txt"
    other.write_text("not a log")
    os.utime(other, (now - 400 * DAY_S, now - 400 * DAY_S))

    assert prune_logs(tmp_path, 90, keep=mined, now=now) == 1
    assert not old.exists() and recent.exists() and mined.exists() and other.exists()
    assert prune_logs(tmp_path, 90, keep=mined, now=now) == 0
    assert prune_logs(tmp_path / "missing", 90) == 0


def test_the_setting_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().capture_keep_days == 90
    monkeypatch.setenv("LMS_CAPTURE_KEEP_DAYS", "7")
    assert load_settings().capture_keep_days == 7
    monkeypatch.setenv("LMS_CAPTURE_KEEP_DAYS", "0")
    with pytest.raises(ConfigError, match="LMS_CAPTURE_KEEP_DAYS"):
        load_settings()
