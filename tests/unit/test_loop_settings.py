"""FSDD_LOOP_* limits: the seed's defaults, each read from the environment, and a value out of
range stops start-up with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from learning_memory.shared.loop_settings import LOOP_TYPES, load_loop_settings
from learning_memory.shared.settings import ConfigError, load_settings

DEFAULT_THRESHOLDS = {"plan": 85, "spec": 85, "build_plan": 80, "build_code": 95}


@pytest.fixture(autouse=True)
def _no_loop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("FSDD_LOOP_"):
            monkeypatch.delenv(var)


def test_defaults_are_the_seeds() -> None:
    limits = load_loop_settings()
    assert {t: limits.threshold(t) for t in LOOP_TYPES} == DEFAULT_THRESHOLDS  # type: ignore[arg-type]
    assert {limits.max_iterations(t) for t in LOOP_TYPES} == {5}  # type: ignore[arg-type]


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_each_limit_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch, loop_type: str) -> None:
    monkeypatch.setenv(f"FSDD_LOOP_{loop_type.upper()}_THRESHOLD", "42")
    monkeypatch.setenv(f"FSDD_LOOP_{loop_type.upper()}_MAX_ITERATIONS", "7")
    limits = load_loop_settings()
    assert limits.threshold(loop_type) == 42  # type: ignore[arg-type]
    assert limits.max_iterations(loop_type) == 7  # type: ignore[arg-type]
    others = [t for t in LOOP_TYPES if t != loop_type]
    assert [limits.threshold(t) for t in others] == [DEFAULT_THRESHOLDS[t] for t in others]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("FSDD_LOOP_PLAN_THRESHOLD", "0"),
        ("FSDD_LOOP_SPEC_THRESHOLD", "101"),
        ("FSDD_LOOP_BUILD_PLAN_THRESHOLD", "eighty"),
        ("FSDD_LOOP_BUILD_CODE_THRESHOLD", "-5"),
        ("FSDD_LOOP_PLAN_MAX_ITERATIONS", "0"),
        ("FSDD_LOOP_SPEC_MAX_ITERATIONS", "21"),
        ("FSDD_LOOP_BUILD_PLAN_MAX_ITERATIONS", "2.5"),
        ("FSDD_LOOP_BUILD_CODE_MAX_ITERATIONS", ""),
    ],
)
def test_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_loop_settings()


def test_bounds_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FSDD_LOOP_PLAN_THRESHOLD", "1")
    monkeypatch.setenv("FSDD_LOOP_SPEC_THRESHOLD", "100")
    monkeypatch.setenv("FSDD_LOOP_PLAN_MAX_ITERATIONS", "1")
    monkeypatch.setenv("FSDD_LOOP_SPEC_MAX_ITERATIONS", "20")
    limits = load_loop_settings()
    assert (limits.plan_threshold, limits.spec_threshold) == (1, 100)
    assert (limits.plan_max_iterations, limits.spec_max_iterations) == (1, 20)


def test_serve_refuses_to_start_on_an_out_of_range_value() -> None:
    env = {"PATH": "/usr/bin:/bin", "LMS_QUEUE": "inline", "FSDD_LOOP_BUILD_CODE_THRESHOLD": "150"}
    proc = subprocess.run(
        [sys.executable, "-m", "learning_memory", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "FSDD_LOOP_BUILD_CODE_THRESHOLD" in proc.stderr and "150" in proc.stderr
    assert proc.stdout == ""


def test_the_state_folder_defaults_under_the_data_folder(tmp_path: Path) -> None:
    assert load_settings(data_dir=tmp_path).state_folder == tmp_path / "state"
    assert load_settings(data_dir=tmp_path, state_dir=tmp_path / "s").state_folder == tmp_path / "s"
