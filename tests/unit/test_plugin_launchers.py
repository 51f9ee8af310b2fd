"""The plugin's launchers: where ``plugin/bin/learning-memory`` looks for the CLI, in order, and
that ``plugin/bin/learning-memory-hook`` fails open. Each candidate is a tiny script that says
who it is, so the test sees which one ran."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
LAUNCHER = PLUGIN / "bin" / "learning-memory"
HOOK = PLUGIN / "bin" / "learning-memory-hook"


def _fake_cli(path: Path, name: str, body: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n{body}\necho "{name} $*"\n')
    path.chmod(0o755)
    return path


def _run(
    launcher: Path, env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(launcher), *args], env=env, input=stdin, capture_output=True, text=True, timeout=10
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A plugin root with no checkout venv beside it, an empty config and a PATH with only sh."""
    root = tmp_path / "checkout" / "plugin"
    root.mkdir(parents=True)
    (tmp_path / "path").mkdir()
    return {
        "CLAUDE_PLUGIN_ROOT": str(root),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path),
        "PATH": f"{tmp_path / 'path'}:/usr/bin:/bin",
    }


def _venv_cli(env: dict[str, str]) -> Path:
    return Path(env["CLAUDE_PLUGIN_ROOT"]).parent / ".venv" / "bin" / "learning-memory"


def _recorded(env: dict[str, str], target: Path) -> None:
    record = Path(env["XDG_CONFIG_HOME"]) / "learning-memory" / "command"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(f"{target}\n")


def test_lms_command_wins(env: dict[str, str], tmp_path: Path) -> None:
    _fake_cli(_venv_cli(env), "venv")
    env["LMS_COMMAND"] = str(_fake_cli(tmp_path / "chosen", "chosen"))
    assert _run(LAUNCHER, env, "serve").stdout == "chosen serve\n"


def test_the_checkout_venv_comes_before_the_recorded_path(env: dict[str, str], tmp_path: Path) -> None:
    _fake_cli(_venv_cli(env), "venv")
    _recorded(env, _fake_cli(tmp_path / "recorded", "recorded"))
    assert _run(LAUNCHER, env, "serve").stdout == "venv serve\n"


def test_the_recorded_path_comes_before_path(env: dict[str, str], tmp_path: Path) -> None:
    _recorded(env, _fake_cli(tmp_path / "recorded", "recorded"))
    _fake_cli(tmp_path / "path" / "learning-memory", "on-path")
    assert _run(LAUNCHER, env, "serve").stdout == "recorded serve\n"


def test_a_stale_recorded_path_falls_through_to_path(env: dict[str, str], tmp_path: Path) -> None:
    _recorded(env, tmp_path / "gone")
    _fake_cli(tmp_path / "path" / "learning-memory", "on-path")
    assert _run(LAUNCHER, env, "serve").stdout == "on-path serve\n"


def test_nothing_found_says_so_and_fails(env: dict[str, str]) -> None:
    done = _run(LAUNCHER, env, "serve")
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the MCP wire
    assert "learning-memory claude install" in done.stderr


def test_hook_passes_a_successful_answer_and_its_stdin(env: dict[str, str], tmp_path: Path) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "brief"}}
    env["LMS_COMMAND"] = str(
        _fake_cli(tmp_path / "cli", "unused", f"cat >/dev/null; echo '{json.dumps(answer)}'; exit 0")
    )
    done = _run(HOOK, env, "session-start", stdin='{"hook_event_name": "SessionStart"}')
    assert done.returncode == 0
    assert json.loads(done.stdout) == answer


def test_hook_reads_stdin_through(env: dict[str, str], tmp_path: Path) -> None:
    env["LMS_COMMAND"] = str(_fake_cli(tmp_path / "cli", "got", "read -r line; printf '%s ' \"$line\""))
    assert _run(HOOK, env, "session-start", stdin="hello\n").stdout == "hello got hook session-start\n"


@pytest.mark.parametrize(
    "body", ["echo partial; echo boom >&2; exit 3", "echo not json; kill -9 $$"], ids=["fails", "killed"]
)
def test_hook_fails_open_when_the_cli_fails(env: dict[str, str], tmp_path: Path, body: str) -> None:
    env["LMS_COMMAND"] = str(_fake_cli(tmp_path / "cli", "unused", body))
    done = _run(HOOK, env, "session-start")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_hook_fails_open_when_nothing_is_installed(env: dict[str, str]) -> None:
    done = _run(HOOK, env, "session-start")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
