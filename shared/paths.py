"""Default locations, computable without importing pydantic (the stdio front needs them first)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_VAR = "LMS_DATA_DIR"


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "learning-memory"


def default_models_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "learning-memory" / "models"


def data_dir_from_env() -> Path:
    return Path(os.environ.get(DATA_DIR_VAR) or default_data_dir())


# Capture's layout in the data folder, for the commands (SessionStart, SessionEnd) that run
# without settings, the server's hooks and the worker's miner alike.
CAPTURE_VAR = "LMS_CAPTURE"
RECENT_FIXES_FILE = "recent.json"  # a project's latest fixes, for the SessionStart brief
# What a person curated out (retired values, experiences marked wrong) for the brief to skip,
# under the data folder; the worker rewrites it after each curation change.
CURATED_FILE = Path("cache") / "curated.json"


def capture_dir(data_dir: Path) -> Path:
    """``<data_dir>/capture``: ``<project>/sessions/<session>.jsonl``, ``<project>/recent.json``
    and the fix index."""
    return data_dir / "capture"


def capture_from_env() -> bool:
    """``LMS_CAPTURE`` as the settings read it (false, 0, no or off turn capture off)."""
    return os.environ.get(CAPTURE_VAR, "true").strip().lower() not in ("0", "false", "no", "off")
