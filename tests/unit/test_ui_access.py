"""Who may reach the web view, and the form token that guards its writes (no store needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from learning_memory.cli.ui import address, answers, default_port, where
from learning_memory.composition import in_process_executor
from learning_memory.server.ui import params
from learning_memory.server.ui.access import require_safe_bind, same_secret
from learning_memory.server.ui.actions import back
from learning_memory.server.ui.app import ui_app
from learning_memory.server.ui.journal_view import JournalView
from learning_memory.server.ui.render import _age, _short
from learning_memory.shared.contracts.experiences import GhapEntry
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.settings import ConfigError, load_settings


def _app(tmp_path: Path, token: str | None = None) -> TestClient:
    settings = load_settings(
        data_dir=tmp_path / "data", journal_dir=tmp_path / "journal", queue="inline", auth_token=token
    )
    return TestClient(ui_app(settings, in_process_executor, host="127.0.0.1"))


def test_only_loopback_without_a_token() -> None:
    require_safe_bind("127.0.0.1", None)
    require_safe_bind("0.0.0.0", "secret")
    with pytest.raises(ConfigError, match="LMS_AUTH_TOKEN"):
        require_safe_bind("0.0.0.0", None)


def test_a_token_in_the_address_becomes_a_cookie(tmp_path: Path) -> None:
    with _app(tmp_path, token="s3cret") as client:
        refused = client.get("/static/app.css")
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "unauthorized"
        assert client.get("/static/app.css?token=wrong").status_code == 401
        moved = client.get("/static/app.css?token=s3cret&x=1", follow_redirects=False)
        assert moved.status_code == 303 and "token" not in moved.headers["location"]
        assert client.get("/static/app.css").status_code == 200  # the cookie now
    with _app(tmp_path, token="s3cret") as client:
        assert client.get("/static/app.css", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_a_post_without_the_form_token_changes_nothing(tmp_path: Path) -> None:
    with _app(tmp_path) as client:
        answer = client.post("/memories/abc/delete", data={"form_token": "forged"})
        assert answer.status_code == 400 and "out of date" in answer.text
        assert client.get("/memories/abc/delete").status_code == 404  # no page there: a GET changes nothing
        assert "forms change with POST" in client.put("/memories/abc/delete").text


def test_back_stays_inside_the_view() -> None:
    said = back({"back": "https://evil.example/x"}, "/memories", notice="done").headers["location"]
    assert said.startswith("/memories?") and "evil" not in said
    again = back({"back": "/values?axis=full&notice=old&undo=1"}, "/values", notice="new", undo="2")
    assert again.headers["location"] == "/values?axis=full&notice=new&undo=2"
    assert back({"back": "//evil.example"}, "/", notice="x").headers["location"].startswith("/?")


def test_params_are_read_strictly() -> None:
    assert params.number({"n": "5"}, "n", 1, 0, 10) == 5 and params.number({}, "n", 1, 0, 10) == 1
    for bad in ({"n": "x"}, {"n": "11"}):
        with pytest.raises(ValidationError):
            params.number(bad, "n", 1, 0, 10)
    assert params.fraction({"f": "0.5"}, "f") == 0.5
    for raw in ({}, {"f": "2"}, {"f": "half"}):
        with pytest.raises(ValidationError):
            params.fraction(raw, "f")
    assert params.day({"d": "2026-03-14"}, "d") == datetime(2026, 3, 14, tzinfo=UTC)
    with pytest.raises(ValidationError, match="date like"):
        params.day({"d": "March"}, "d")
    with pytest.raises(ValidationError, match="longer than"):
        params.text({"t": "x" * 30}, "t", 10)
    with pytest.raises(ValidationError, match="is required"):
        params.required({"t": "  "}, "t")
    with pytest.raises(ValidationError, match="must be text"):
        params.text({"t": 3}, "t")
    assert same_secret("a", "a") and not same_secret(None, "a") and not same_secret("b", "a")


def test_the_journal_is_read_without_writing(tmp_path: Path) -> None:
    view = JournalView(tmp_path / "journal")
    assert view.entries() == [] and not (tmp_path / "journal").exists()
    (tmp_path / "journal" / "archive").mkdir(parents=True)
    now = datetime.now(UTC)
    entry = GhapEntry(
        id="ghap_1",
        session_id="s",
        domain="debugging",
        strategy="divide-and-conquer",
        goal="g",
        hypothesis="h",
        action="a",
        prediction="p",
        created_at=now,
        updated_at=now,
    )
    (tmp_path / "journal" / "archive" / "ghap_1.json").write_text(entry.model_dump_json())
    (tmp_path / "journal" / "archive" / "broken.json").write_text("{")
    (tmp_path / "journal" / "active.json").write_text(
        entry.model_copy(update={"id": "ghap_2"}).model_dump_json()
    )
    assert {e.id for e in view.entries()} == {"ghap_1", "ghap_2"}
    assert view.entry("ghap_2") is not None and view.entry("nope") is None
    (tmp_path / "journal" / "archive" / "ghap_1.json").unlink()
    assert [e.id for e in view.entries()] == ["ghap_2"]


def test_small_words() -> None:
    assert _age(None) == "" and _age(datetime.now(UTC)) == "just now"
    assert _age("2020-01-01T00:00:00").endswith("days ago")
    assert _short("a  b\nc") == "a b c" and _short("x" * 200, 10) == "x" * 9 + "…"


def test_where_says_whether_the_view_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMS_UI_PORT", "9")
    assert default_port() == 9
    monkeypatch.setenv("LMS_UI_PORT", "x")
    assert default_port() == 8766
    assert address("::1", 5) == "http://[::1]:5/"
    assert not answers("127.0.0.1", 9)
    where("127.0.0.1", 9)
    assert "not running" in capsys.readouterr().out
