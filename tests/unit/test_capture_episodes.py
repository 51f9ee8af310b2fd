"""Cutting hand-written session logs into episodes (worker.capture.episodes), and reading logs."""

from __future__ import annotations

from learning_memory.worker.capture.episodes import CommitInfo, Episode, episode_id, mine
from learning_memory.worker.capture.session_log import parse_events
from tests.capture_sessions import LOGIN, LOGOUT, Script, failure

SHA = "c" * 40


def one(script: Script, commits: dict[str, CommitInfo] | None = None) -> Episode:
    [episode] = mine(script.events, commits)
    return episode


def test_red_then_edits_then_green_is_confirmed() -> None:
    script = (
        Script()
        .prompt("The login test fails since the refactor. Please fix it.")
        .run("pytest -x", LOGIN)
        .read("src/app.py")
        .edit("src/app.py", (10, 12))
        .run("pip install -e .", kind="other", runner=None)
        .run("pytest -x")
        .stop()
    )
    episode = one(script)
    assert episode.outcome == "confirmed"
    assert episode.goal == "The login test fails since the refactor."
    assert [fix.failure for fix in episode.fixed] == [LOGIN]
    assert episode.fixed[0].edits == episode.edits and episode.files == ("src/app.py",)
    assert episode.commands == ("pytest -x", "pip install -e .")
    assert [run.id for run in episode.runs] == ["s1-e2", "s1-e6"]
    assert episode.id == episode_id("s1", "s1-e2") and episode.ghap_id is None
    assert episode.started_at == script.events[1].at and episode.ended_at == script.events[5].at
    assert episode.signatures == (LOGIN.signature,)
    assert mine(script.events) == [episode]  # deterministic


def test_a_green_rerun_without_edits_is_flaky_and_dropped() -> None:
    assert mine(Script().run("pytest", LOGIN).run("pytest").events) == []
    # Edits before the last red run do not count: the green came without any since.
    flaky = Script().run("pytest", LOGIN).edit("src/app.py").run("pytest", LOGIN).run("pytest")
    assert mine(flaky.events) == []


def test_still_red_at_the_end_after_edits_is_falsified() -> None:
    script = Script().run("pytest", LOGIN).edit("src/app.py", (3, 4)).run("pytest", LOGIN).end()
    episode = one(script)
    assert episode.outcome == "falsified"
    assert episode.fixed == () and episode.remaining == (LOGIN,)
    assert episode.signatures == (LOGIN.signature,)
    assert episode.ended_at == script.events[2].at  # its runner's last run


def test_moving_on_after_edits_without_running_again_is_abandoned() -> None:
    base = Script().prompt("Fix login").run("pytest", LOGIN).edit("src/app.py")
    # Nothing since the edits: still in progress, decided by a later mining.
    assert mine(base.events) == []
    moved = base.prompt("Never mind, update the README instead").edit("README.md")
    episode = one(moved)
    assert episode.outcome == "abandoned" and episode.goal == "Fix login"
    assert episode.files == ("src/app.py", "README.md")
    # A run of another runner since is no run of this one.
    assert one(moved.run("mypy src", kind="build", runner="mypy")).outcome == "abandoned"
    # Running it again after the prompt makes it an episode that goes on.
    assert one(moved.run("pytest")).outcome == "confirmed"


def test_a_red_run_without_edits_and_nothing_else_is_no_episode() -> None:
    assert mine(Script().run("pytest", LOGIN).prompt("thanks").end().events) == []


def test_runs_inside_an_active_ghap_entry_carry_its_id() -> None:
    script = Script().run("pytest", LOGIN, ghap_id="g-1").edit("src/app.py").run("pytest", ghap_id="g-1")
    assert one(script).ghap_id == "g-1"


def test_two_failures_one_fixed() -> None:
    first = Script().run("pytest", LOGIN, LOGOUT).edit("src/auth.py", (5, 9)).run("pytest", LOGOUT)
    episode = one(first.end())
    assert episode.outcome == "falsified"
    assert [fix.failure for fix in episode.fixed] == [LOGIN]
    assert [edit.file for edit in episode.fixed[0].edits] == ["src/auth.py"]
    assert episode.remaining == (LOGOUT,)
    # Fixing the other too: confirmed, each fix with the edits made while it was failing.
    second = first.edit("src/session.py").run("pytest")
    episode = one(second)
    assert episode.outcome == "confirmed"
    fixes = {fix.failure.signature: [edit.file for edit in fix.edits] for fix in episode.fixed}
    assert fixes == {LOGIN.signature: ["src/auth.py"], LOGOUT.signature: ["src/auth.py", "src/session.py"]}
    assert episode.signatures == tuple(sorted((LOGIN.signature, LOGOUT.signature)))


def test_the_commit_after_the_green_run_names_the_goal() -> None:
    script = (
        Script()
        .prompt("fix it")
        .run("pytest", LOGIN)
        .edit("src/app.py")
        .run("pytest")
        .commit("a" * 40)  # touches other files: not this fix's commit
        .commit(SHA)
    )
    commits = {
        "a" * 40: CommitInfo("a" * 40, "Update docs", ("README.md",)),
        SHA: CommitInfo(SHA, "Fix login when the session expired", ("src/app.py", "tests/test_app.py")),
    }
    episode = one(script, commits)
    assert episode.goal == "Fix login when the session expired"
    assert episode.commit == commits[SHA]
    # Unknown commits (no repository to read them from): the prompt names it.
    assert one(script).goal == "fix it" and one(script).commit is None


def test_without_prompt_or_commit_the_goal_is_the_first_failing_test() -> None:
    episode = one(Script().run("pytest", LOGIN).edit("src/app.py").run("pytest"))
    assert episode.goal == "make tests/test_app.py::test_login pass"
    build = failure(None, 'Argument 1 to "login" has incompatible type', "arg-type")
    script = Script().run("mypy .", build, kind="build", runner="mypy").edit("a.py")
    episode = one(script.run("mypy .", kind="build", runner="mypy"))
    assert episode.goal == "make mypy pass" and episode.kind == "build"


def test_a_failure_coming_back_later_is_not_confirmed() -> None:
    script = (
        Script()
        .run("pytest", LOGIN)
        .edit("src/app.py")
        .run("pytest")
        .edit("src/other.py")
        .run("pytest", LOGIN)  # back: the first fix did not hold, and a new episode opens
        .edit("src/app.py")
        .run("pytest")
    )
    first, second = mine(script.events)
    assert first.outcome == "falsified" and first.fixed == ()
    assert second.outcome == "confirmed" and second.started_at == script.events[4].at


def test_a_partial_green_run_keeps_only_what_stayed_fixed() -> None:
    script = (
        Script()
        .run("pytest", LOGIN, LOGOUT)
        .edit("src/app.py")
        .run("pytest -k login")  # green, but only one test ran
        .run("pytest", LOGOUT)  # the other was never fixed
        .edit("src/session.py")
        .run("pytest")
    )
    first, second = mine(script.events)
    assert first.outcome == "confirmed" and [f.failure for f in first.fixed] == [LOGIN]
    assert first.signatures == (LOGIN.signature,)
    assert second.outcome == "confirmed" and [f.failure for f in second.fixed] == [LOGOUT]
    assert second.files == ("src/session.py",)


def test_runners_are_followed_apart() -> None:
    typing = failure(None, "Incompatible return value type", "return-value")
    script = (
        Script()
        .run("pytest", LOGIN)
        .run("mypy .", typing, kind="build", runner="mypy")
        .edit("src/app.py")
        .run("mypy .", kind="build", runner="mypy")
        .edit("src/app.py")
        .run("pytest")
    )
    tests, types = mine(script.events)
    assert (tests.runner, tests.outcome, len(tests.edits)) == ("pytest", "confirmed", 2)
    assert (types.runner, types.outcome, len(types.edits)) == ("mypy", "confirmed", 1)


def test_no_signal_no_episode_but_an_unparsed_error_line_is_followed() -> None:
    silent = Script().run("make test", exit_code=2).edit("a.py").run("make test")
    assert mine(silent.events) == []
    unparsed = Script().run("make test", last_error="Segmentation fault").edit("a.c").run("make test")
    episode = one(unparsed)
    assert episode.outcome == "confirmed" and episode.fixed[0].failure.message == "Segmentation fault"


def test_other_commands_never_open_an_episode() -> None:
    script = Script().run("ls", kind="other", runner=None, exit_code=1).edit("a.py").run("ls", kind="other")
    assert mine(script.events) == []


def test_parse_reads_each_event_once_and_skips_a_torn_line() -> None:
    script = Script().run("pytest", LOGIN).edit("src/app.py").run("pytest").commit(SHA)
    lines = [event.model_dump_json() for event in script.events]
    torn = lines[3][: len(lines[3]) // 2]  # a hook still writing it
    events = parse_events([lines[0], lines[1], lines[1], "", lines[2], torn])
    assert [event.id for event in events] == ["s1-e1", "s1-e2", "s1-e3"]
    assert mine(events)[0].outcome == "confirmed"
