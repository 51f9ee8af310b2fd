"""Anchors checked against the code as it is now (worker.capture.staleness): fresh, changed,
gone, and what cannot be told; the digest the capture takes; the lines that say so; and the fix
index's staleness flag, which the hooks' fix hints heed."""

from __future__ import annotations

import os
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from learning_memory.server.capture.fix_hints import file_lessons, fix_hints
from learning_memory.shared.context_lines import experience_line
from learning_memory.shared.contracts.capture import RunOutcome
from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.shared.fix_index import EpisodeRecord, FixIndex, FixRecord, SeenFailure, fix_index_path
from learning_memory.worker.capture.source_units import digest, read_units
from learning_memory.worker.capture.staleness import StalenessChecker
from learning_memory.worker.capture.symbols import SymbolResolver
from learning_memory.worker.jobs.staleness import experience_states
from tests.capture_sessions import LOGIN, T0

APP = """class Session:
    def refresh(self):
        return 1


def login(user, password):
    if not password:
        return None
    return Session()
"""
LOGIN_SOURCE = "def " + APP.split("def ")[-1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(APP)
    return tmp_path


def anchor(symbol: str | None = "login", file: str = "src/app.py", source: str = LOGIN_SOURCE) -> Anchor:
    return Anchor(file=file, symbol=symbol, digest=digest(source) if symbol else None)


def rewrite(repo: Path, text: str) -> None:
    path = repo / "src" / "app.py"
    path.write_text(text)
    # A new modification time even on a coarse clock: the checker caches by it.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_the_digest_ignores_whitespace_only() -> None:
    assert digest("def f():\n    return 1\n") == digest("def f():\n        return 1")
    assert digest("def f():\n    return 1\n") != digest("def f():\n    return 2\n")


def test_the_capture_takes_each_units_digest(repo: Path) -> None:
    resolver = SymbolResolver(repo, "p")
    assert resolver.digests("src/app.py")["login"] == digest(LOGIN_SOURCE.rstrip())
    assert [unit.name for unit in read_units(repo, "src/app.py")] == ["Session", "Session.refresh", "login"]


def test_fresh_while_the_unit_is_as_it_was(repo: Path) -> None:
    checker = StalenessChecker(repo)
    assert checker.anchor(anchor()) == "fresh"
    assert checker.anchor(anchor(None)) == "fresh"  # a file anchor: the file is there
    assert checker.anchor(Anchor(file="src/app.py", symbol="login")) == "fresh"  # no digest taken
    # Re-indented or reflowed: the same code.
    rewrite(repo, APP.replace("    return Session()", "    return   Session()"))
    assert checker.anchor(anchor()) == "fresh"
    assert (
        checker.experience([anchor(), anchor("Session.refresh", source="def refresh(self):\n return 1")])
        == "fresh"
    )


def test_changed_when_the_unit_is_rewritten(repo: Path) -> None:
    checker = StalenessChecker(repo)
    assert checker.anchor(anchor()) == "fresh"
    rewrite(repo, APP.replace("if not password:", "if password is None:"))
    assert checker.anchor(anchor()) == "changed"  # parsed again: the file's time moved
    assert checker.experience([anchor()]) == "changed"


def test_gone_when_the_unit_or_the_file_is_deleted(repo: Path) -> None:
    rewrite(repo, APP.split("\n\ndef login")[0] + "\n")
    checker = StalenessChecker(repo)
    assert checker.anchor(anchor()) == "gone"
    assert checker.anchor(anchor(None)) == "fresh"
    # One anchor gone of two: what it taught is only partly there.
    assert checker.experience([anchor(), anchor(None)]) == "changed"
    (repo / "src" / "app.py").unlink()
    assert checker.anchor(anchor()) == checker.anchor(anchor(None)) == "gone"
    assert checker.experience([anchor(), anchor(None)]) == "gone"


def test_what_cannot_be_told_is_unknown(repo: Path) -> None:
    (repo / "notes.unknownlang").write_text("login: refuse without a password\n")
    checker = StalenessChecker(repo)
    # A language we do not parse: a named unit cannot be checked; the file still can.
    assert checker.anchor(anchor("login", file="notes.unknownlang")) == "unknown"
    assert checker.anchor(anchor(None, file="notes.unknownlang")) == "fresh"
    assert checker.anchor(anchor("login", file="notes.unknownlang.gone")) == "gone"
    # Unreadable (a folder where the file was): unknown; an experience with nothing known is left as is.
    (repo / "src" / "app.py").unlink()
    (repo / "src" / "app.py").mkdir()
    assert checker.anchor(anchor()) == "unknown"
    assert checker.experience([anchor(), anchor("login", file="notes.unknownlang")]) == "unknown"


def test_the_line_says_the_code_changed() -> None:
    data = {
        "source": "auto",
        "outcome_status": "confirmed",
        "goal": "Refuse logins",
        "outcome_result": "green",
    }
    assert "code changed since" not in experience_line(data)
    assert experience_line({**data, "stale": "changed"}).endswith("(code changed since)")
    long = {**data, "stale": "changed", "goal": "word " * 200}
    assert experience_line(long).endswith("(code changed since)") and len(experience_line(long)) <= 280


def test_fix_hints_heed_the_staleness_flag(tmp_path: Path) -> None:
    index = FixIndex(fix_index_path(tmp_path))
    fixed = FixRecord(LOGIN, ("src/app.py",), ("login",), None, None, T0)
    record = EpisodeRecord("ep1", "x1", "confirmed", False, T0, T0 + timedelta(minutes=1), "{}", (fixed,))
    index.record_session("p", "s1", str(tmp_path), [SeenFailure(LOGIN, T0)], [record])
    failed = RunOutcome(kind="test", runner="pytest", passed=False, exit_code=1, failures=[LOGIN])

    [hint] = fix_hints(index, "p", tmp_path, failed).lines
    assert "code changed since" not in hint
    index.mark_stale({"x1": "changed"})
    [hint] = fix_hints(index, "p", tmp_path, failed).lines
    assert "(code changed since)" in hint
    assert "(code changed since)" in file_lessons(index, "p", tmp_path, "src/app.py").text
    index.mark_stale({"x1": "gone"})
    assert fix_hints(index, "p", tmp_path, failed).lines == []
    assert file_lessons(index, "p", tmp_path, "src/app.py").lines == []
    index.mark_stale({"x1": None})  # told anew
    assert [fix.stale for fix in index.fixes_for("p", [LOGIN])] == [None]


def test_an_index_from_before_staleness_gains_its_table_on_the_next_write(tmp_path: Path) -> None:
    index = FixIndex(fix_index_path(tmp_path))
    fixed = FixRecord(LOGIN, ("src/app.py",), ("login",), None, None, T0)
    record = EpisodeRecord("ep1", "x1", "confirmed", False, T0, T0, "{}", (fixed,))
    index.record_session("p", "s1", str(tmp_path), [], [record])
    with sqlite3.connect(index.path) as conn:  # as the previous version left it
        conn.execute("DROP TABLE stale")
        conn.execute("PRAGMA user_version = 1")
    index.record_session("p", "s1", str(tmp_path), [], [record])
    index.mark_stale({"x1": "changed"})
    assert [fix.stale for fix in FixIndex(index.path).fixes_for("p", [LOGIN])] == ["changed"]


def test_an_experience_nothing_can_be_told_about_keeps_its_state(repo: Path) -> None:
    (repo / "notes.unknownlang").write_text("login\n")
    payloads: list[dict[str, object]] = [
        {"ghap_id": "fresh", "anchors": [anchor().model_dump()]},
        {"ghap_id": "unknown", "anchors": [anchor("login", file="notes.unknownlang").model_dump()]},
        {"ghap_id": "none", "anchors": []},
        {"ghap_id": "gone", "anchors": [anchor(file="src/gone.py").model_dump()]},
    ]
    assert experience_states(repo, payloads) == {"fresh": None, "gone": "gone"}
