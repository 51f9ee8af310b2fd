from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from learning_memory.shared.settings import ConfigError, load_settings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LMS_QUEUE", "LMS_REDIS_URL", "LMS_DATA_DIR", "LMS_QDRANT_URL", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    settings = load_settings()
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.queue == "auto"
    assert settings.qdrant_url is None
    assert settings.journal_dir == Path(".claude/journal")
    assert settings.repo_path == Path.cwd()
    assert settings.data_dir == Path.home() / ".local" / "share" / "learning-memory"
    assert settings.log_dir == settings.data_dir / "logs"


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LMS_QUEUE", "inline")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setenv("LMS_QDRANT_URL", "http://qdrant:6333")
    monkeypatch.setenv("LMS_AUTH_TOKEN", "s3cret")
    settings = load_settings()
    assert settings.queue == "inline"
    assert settings.data_dir == tmp_path / "learning-memory"
    assert settings.qdrant_url == "http://qdrant:6333"
    assert settings.auth_token is not None and settings.auth_token.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("LMS_QUEUE", "sometimes"),
        ("LMS_REDIS_URL", "http://127.0.0.1:6379"),
        ("LMS_LOG_LEVEL", "LOUD"),
        ("LMS_QDRANT_URL", "qdrant:6333"),
        ("LMS_NAMESPACE", "has space"),
        ("LMS_TOOL_WAIT_S", "-1"),
    ],
)
def test_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()


def test_empty_qdrant_url_means_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMS_QDRANT_URL", "")
    assert load_settings().qdrant_url is None


@pytest.mark.parametrize("command", ["serve", "worker", "status"])
def test_cli_refuses_to_start_on_bad_value(command: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "LMS_QUEUE": "bogus"}
    proc = subprocess.run(
        [sys.executable, "-m", "learning_memory", command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "LMS_QUEUE" in proc.stderr
    assert proc.stdout == ""


def test_settings_round_trip_through_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = load_settings(
        namespace="child", data_dir=tmp_path, auth_token="tok", autostart_worker=False, tool_wait_s=3.5
    )
    for var, value in original.to_env().items():
        monkeypatch.setenv(var, value)
    assert load_settings() == original
