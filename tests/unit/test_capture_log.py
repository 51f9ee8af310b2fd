"""The session log and where a session is: project identity across clones and worktrees, HEAD
read from files, appends that are atomic, deduplicated and safe across processes."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.server.capture import project
from learning_memory.server.capture.recorder import Recorder, changed_lines
from learning_memory.server.capture.session_log import SessionLog, safe_name
from learning_memory.shared.contracts.capture import Failure, RunOutcome, SessionEvent
from tests.git_repo import git


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def f():\n    return 1\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "first")
    return root


def _head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").decode().strip()


def test_worktrees_and_clones_share_one_project(tmp_path: Path) -> None:
    main = _repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt2"), "-b", "other")
    subprocess.run(["git", "clone", "-q", str(main), str(tmp_path / "clone")], check=True)
    (main / "sub").mkdir()
    places = [project.place_of(str(p)) for p in (main, main / "sub", tmp_path / "wt2", tmp_path / "clone")]
    assert len({p.project for p in places}) == 1
    assert places[0].project.startswith("repo-")
    assert places[1].worktree == main.resolve()
    assert places[2].worktree == (tmp_path / "wt2").resolve()
    assert project.branch(places[2]) == "other"
    assert project.head_commit(places[2]) == _head(main)
    assert project.head_commit(places[3]) == _head(main)


def test_a_folder_outside_git_is_its_own_project(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    assert project.place_of(str(one)).project.startswith("dir-")
    assert project.place_of(str(one)).project != project.place_of(str(two)).project
    assert project.head_commit(project.place_of(str(one))) is None


def test_before_the_first_commit_worktrees_agree_and_the_identity_then_settles(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    before = project.place_of(str(root))
    assert before.project.startswith("git-")
    assert project.head_commit(before) is None
    (root / "a.txt").write_text("a")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "a")
    assert project.place_of(str(root)).project.startswith("repo-")


def test_head_is_read_from_packed_refs_and_detached_heads(tmp_path: Path) -> None:
    root = _repo(tmp_path / "r")
    sha = _head(root)
    git(root, "pack-refs", "--all")
    place = project.place_of(str(root))
    assert project.head_commit(place) == sha
    git(root, "checkout", "-q", "--detach")
    assert project.head_commit(place) == sha


def _event(n: int, session: str = "s1", event_id: str | None = None) -> SessionEvent:
    return SessionEvent(
        id=event_id or f"e{n}",
        session_id=session,
        type="prompt",
        at=datetime.now(UTC),
        project="repo-x",
        worktree="/w",
        prompt=f"prompt {n}",
    )


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_an_event_is_written_once_even_when_delivered_twice(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    assert log.append(_event(1))
    assert not log.append(_event(1))
    assert SessionLog(tmp_path).append(_event(1)) is False  # another process sees it too
    assert log.append(_event(2))
    assert [line["id"] for line in _lines(log.path("repo-x", "s1"))] == ["e1", "e2"]
    assert log.event_count("repo-x", "s1") == 2


def test_a_torn_last_line_stays_alone(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    log.append(_event(1))
    path = log.path("repo-x", "s1")
    with path.open("ab") as handle:
        handle.write(b'{"id":"torn","sess')
    assert SessionLog(tmp_path).append(_event(2))
    lines = path.read_text().splitlines()
    assert lines[1] == '{"id":"torn","sess'
    assert json.loads(lines[2])["id"] == "e2"


def test_untrusted_names_become_digests(tmp_path: Path) -> None:
    assert safe_name("0b6c-session_1") == "0b6c-session_1"
    for bad in ("../etc", "a/b", ".hidden", "", "x" * 200):
        name = safe_name(bad)
        assert "/" not in name and not name.startswith(".") and len(name) < 40
    log = SessionLog(tmp_path)
    assert log.path("repo-x", "../../x").parent == tmp_path / "repo-x" / "sessions"


def _append_many(root: str, worker: int) -> None:
    log = SessionLog(Path(root))
    for n in range(200):
        log.append(_event(n, event_id=f"w{worker}-{n}"))
        log.append(_event(n, event_id=f"shared-{n}"))


def test_processes_appending_at_once_lose_and_double_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    ids = [line["id"] for line in _lines(SessionLog(tmp_path).path("repo-x", "s1"))]
    assert len(ids) == len(set(ids)) == 3 * 200 + 200


def test_changed_lines_come_from_the_structured_patch() -> None:
    patch = json.dumps(
        [
            {
                "oldStart": 3,
                "oldLines": 4,
                "newStart": 3,
                "newLines": 5,
                "lines": ["     a", "-    b", "+    B", "+    C", "     d"],
            },
            {"oldStart": 20, "oldLines": 2, "newStart": 21, "newLines": 1, "lines": [" x", "-y"]},
        ]
    )
    assert [(r.start, r.end) for r in changed_lines(patch)] == [(4, 5), (22, 22)]
    assert changed_lines("") == []
    assert changed_lines("not json") == []
    assert changed_lines('[{"newStart": "x"}, 3]') == []


def test_a_commit_made_by_a_command_is_an_event(tmp_path: Path) -> None:
    root = _repo(tmp_path / "r")
    recorder = Recorder(tmp_path / "capture", tmp_path / "capture" / "fixes.sqlite3")
    outcome = RunOutcome(kind="other", passed=True, exit_code=0)
    assert recorder.prompt("s1", str(root), "fix the thing") is not None
    (root / "app.py").write_text("def f():\n    return 2\n")
    git(root, "commit", "-q", "-am", "Fix the thing")
    events = recorder.run("s1", str(root), "toolu_1", "git commit -am 'Fix the thing'", outcome, None)
    assert [e.type for e in events] == ["run", "commit"]
    assert events[1].head == _head(root) and events[1].previous_head != events[1].head
    assert recorder.run("s1", str(root), "toolu_2", "git status", outcome, None)[0].type == "run"
    failing = RunOutcome(
        kind="test",
        runner="pytest",
        exit_code=1,
        passed=False,
        failures=[Failure(test_id="t::a", error_type="AssertionError", message="x", signature="abc")],
    )
    run = recorder.run("s1", str(root / "."), "toolu_3", "pytest", failing, "ghap-1")[0]
    assert run.run == failing and run.ghap_id == "ghap-1" and run.branch == "main"
    edit = recorder.edit("s1", str(root), "toolu_4", str(root / "app.py"), "")
    assert edit is not None and edit.file == "app.py"
    assert recorder.marker("stop", "s1", str(root)) is not None
    assert recorder.prompt("", str(root), "x") is None and recorder.marker("end", "s1", " ") is None
    lines = _lines(recorder.log.path(run.project, "s1"))
    assert [line["type"] for line in lines] == ["prompt", "run", "commit", "run", "run", "edit", "stop"]


def test_the_session_end_command_logs_the_end_and_mines_detached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from learning_memory.server.capture import session_end

    root = _repo(tmp_path / "r")
    data = tmp_path / "data"
    monkeypatch.setenv("LMS_DATA_DIR", str(data))
    started: list[Path] = []
    monkeypatch.setattr(session_end, "mine_detached", started.append)
    recorder = Recorder(data / "capture", data / "capture" / "fixes.sqlite3")
    assert recorder.prompt("s1", str(root), "fix it") is not None

    assert session_end.main(io.StringIO(json.dumps({"session_id": "s1", "cwd": str(root)}))) == 0
    log = recorder.log.path(project.place_of(str(root)).project, "s1")
    assert started == [log] and json.loads(log.read_text().splitlines()[-1])["type"] == "end"
    assert session_end.main(io.StringIO("not json")) == 0  # fails open, says nothing
    monkeypatch.setenv("LMS_CAPTURE", "false")
    assert session_end.main(io.StringIO(json.dumps({"session_id": "s1", "cwd": str(root)}))) == 0
    assert len(started) == 1


def test_mining_detached_starts_our_own_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from learning_memory.server.capture import session_end

    seen: list[list[str]] = []

    class Recorded:
        def __init__(self, args: list[str], **_: object) -> None:
            seen.append(args)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    session_end.mine_detached(tmp_path / "s.jsonl")
    assert seen and seen[0][1:4] == ["-m", "learning_memory", "mine"]
