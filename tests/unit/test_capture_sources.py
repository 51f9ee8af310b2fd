"""What the miner reads beside the log: the units an edit changed (worker.capture.symbols), the
commits a session made (worker.capture.commits), and the auto experience an episode makes."""

from __future__ import annotations

from pathlib import Path

from learning_memory.shared.contracts.capture import LineRange
from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.worker.capture.commits import session_commits
from learning_memory.worker.capture.episodes import CommitInfo, Edit, mine
from learning_memory.worker.capture.experience import auto_entry, experience_id
from learning_memory.worker.capture.symbols import SymbolResolver
from tests.capture_sessions import LOGIN, LOGOUT, PROJECT, Script
from tests.git_repo import commit, git, write

APP = '''"""The app."""

import os


class Session:
    timeout = 30

    def refresh(self):
        self.token = os.urandom(8)
        return self.token


def login(user, password):
    if not password:
        return None
    return Session()
'''


def edit(file: str, *ranges: tuple[int, int]) -> Edit:
    return Edit(file, tuple(LineRange(start=a, end=b) for a, b in ranges))


def test_edited_lines_name_their_innermost_units(tmp_path: Path) -> None:
    write(tmp_path, "src/app.py", APP)
    resolver = SymbolResolver(tmp_path, PROJECT)
    assert resolver.symbols([edit("src/app.py", (16, 16))]) == {"src/app.py": ("login",)}
    assert resolver.symbols([edit("src/app.py", (10, 17))]) == {"src/app.py": ("Session.refresh", "login")}
    assert resolver.symbols([edit("src/app.py", (7, 7))]) == {"src/app.py": ("Session",)}
    # Outside every unit, past the end, or lines unknown: the file alone.
    assert resolver.symbols([edit("src/app.py", (3, 3), (400, 410)), edit("src/app.py")]) == {
        "src/app.py": ()
    }


def test_files_we_cannot_parse_give_no_symbol(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# App\n\nHow to run it.\n")
    resolver = SymbolResolver(tmp_path, PROJECT)
    found = resolver.symbols([edit("README.md", (1, 2)), edit("src/gone.py", (1, 5))])
    assert found == {"README.md": (), "src/gone.py": ()}


def test_session_commits_read_subject_and_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "src/app.py", APP)
    first = commit(repo, "Add the app", who="alice", days_ago=1)
    write(repo, "src/app.py", APP.replace("return None", "raise ValueError('no password')"))
    write(repo, "tests/test_app.py", "def test_login():\n    pass\n")
    second = commit(
        repo, "Refuse logins without a password\n\nThe body is not the subject.", who="bob", days_ago=0
    )
    events = Script(worktree=str(repo)).commit(first).commit(second).commit("0" * 40).events
    found = session_commits(events)
    assert found == {
        first: CommitInfo(first, "Add the app", ("src/app.py",)),
        second: CommitInfo(second, "Refuse logins without a password", ("src/app.py", "tests/test_app.py")),
    }
    # No repository there: nothing, quietly.
    assert session_commits(Script(worktree=str(tmp_path / "nowhere")).commit(first).events) == {}


def test_an_episode_as_an_auto_experience() -> None:
    script = (
        Script()
        .prompt("Logins without a password must fail.")
        .run("pytest -q", LOGIN, LOGOUT)
        .edit("src/app.py", (15, 16))
        .run("pytest -q")
        .commit("c" * 40)
    )
    info = CommitInfo("c" * 40, "Refuse logins without a password", ("src/app.py",))
    [episode] = mine(script.events, {info.sha: info})
    entry = auto_entry(episode, {"src/app.py": ("login",)})
    assert entry.id == experience_id(episode) and entry.source == "auto" and entry.project == PROJECT
    assert (entry.domain, entry.strategy) == ("debugging", "read-the-error")
    assert entry.goal == "Refuse logins without a password"
    assert entry.hypothesis == (
        "Editing src/app.py (login) fixes tests/test_app.py::test_login: AssertionError: assert <n> == <n>, "
        "tests/test_app.py::test_logout: KeyError: 'session_token'"
    )
    assert entry.action == "Edited src/app.py (login); ran pytest -q"
    assert entry.prediction == "pytest passes"
    assert entry.anchors == [Anchor(file="src/app.py", symbol="login", commit="c" * 40)]
    resolution = entry.resolution
    assert resolution is not None
    assert resolution.status == "confirmed" and resolution.confidence_tier == "auto"
    assert resolution.result == (
        "pytest went green after editing src/app.py (login); "
        "committed cccccccccc (Refuse logins without a password)"
    )
    assert resolution.root_cause is not None and resolution.root_cause.category == "oversight"
    assert "test_logout: KeyError: 'session_token'" in resolution.root_cause.description
    assert [e.passed for e in entry.evidence] == [False, True]
    assert entry.evidence[0].summary.startswith(
        "tests: 3 passed, 2 failed (exit 1): tests/test_app.py::test_login"
    )
    # The same fix in another session is the same experience; another outcome is another.
    again = Script(session_id="s2").run("pytest", LOGIN, LOGOUT).edit("src/app.py").run("pytest")
    assert experience_id(mine(again.events)[0]) == entry.id
    failed = (
        Script(session_id="s3").run("pytest", LOGIN, LOGOUT).edit("src/app.py").run("pytest", LOGIN).end()
    )
    assert experience_id(mine(failed.events)[0]) != entry.id


def test_falsified_and_abandoned_read_plainly() -> None:
    failed = Script().run("pytest", LOGIN, LOGOUT).edit("src/app.py").run("pytest", LOGOUT).end()
    entry = auto_entry(mine(failed.events)[0], {})
    assert entry.resolution is not None and entry.resolution.status == "falsified"
    assert entry.resolution.result == (
        "pytest still failed after editing src/app.py: "
        "tests/test_app.py::test_logout: KeyError: 'session_token' "
        "(went away: tests/test_app.py::test_login: AssertionError: assert <n> == <n>)"
    )
    assert (
        entry.resolution.root_cause is not None and entry.resolution.root_cause.category == "incomplete-fix"
    )
    moved = Script().run("pytest", LOGIN).edit("src/app.py").prompt("Do something else").end()
    entry = auto_entry(mine(moved.events)[0], {})
    assert entry.resolution is not None
    assert (entry.resolution.status, entry.resolution.confidence_tier) == ("abandoned", "abandoned")
    assert entry.resolution.result == "moved on before pytest passed, after editing src/app.py"
    assert entry.resolution.root_cause is None
