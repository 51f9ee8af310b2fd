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
