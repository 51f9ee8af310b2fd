"""Outcome feedback: which episode an item shown to the agent bore on (worker.capture.feedback),
the fix index's feedback table (idempotent per session) and the ranking factor."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from learning_memory.shared.fix_feedback import FLOOR, Outcomes, feedback_factor
from learning_memory.shared.fix_index import FeedbackRecord, FixIndex, fix_index_path
from learning_memory.shared.fix_store import SCHEMA_VERSION, connect
from learning_memory.worker.capture.episodes import mine
from learning_memory.worker.capture.feedback import attribute, outcomes_for
from tests.capture_sessions import LOGIN, LOGOUT, PROJECT, T0, Script

HINT = "exp:11111111-1111-1111-1111-111111111111"
OTHER = "exp:22222222-2222-2222-2222-222222222222"
VALUE = "val:33333333-3333-3333-3333-333333333333"


def outcomes(script: Script) -> dict[str, tuple[str, bool]]:
    """item -> (the id of the event that opened its episode, helped)."""
    episodes = mine(script.events)
    opened = {episode.id: episode.runs[0].id for episode in episodes}
    return {r.item: (opened[r.episode_id], r.helped) for r in attribute(script.events, episodes)}


def test_a_fix_hint_followed_by_a_green_run_after_edits_helped() -> None:
    script = Script().run("pytest", LOGIN).injected("fix_hint", HINT).edit("src/app.py").run("pytest")
    assert outcomes(script) == {HINT: ("s1-e1", True)}


def test_a_fix_hint_still_red_at_the_end_did_not_help() -> None:
    script = (
        Script().run("pytest", LOGIN).injected("fix_hint", HINT).edit("src/app.py").run("pytest", LOGIN).end()
    )
    assert outcomes(script) == {HINT: ("s1-e1", False)}


def test_given_up_after_edits_did_not_help() -> None:
    script = (
        Script()
        .prompt("Fix login")
        .run("pytest", LOGIN)
        .injected("fix_hint", HINT)
        .edit("src/app.py")
        .prompt("Never mind, the README instead")
        .edit("README.md")
    )
    assert outcomes(script) == {HINT: ("s1-e2", False)}


def test_nothing_is_counted_while_the_episode_is_undecided_or_when_none_followed() -> None:
    under_way = Script().run("pytest", LOGIN).injected("fix_hint", HINT).edit("src/app.py")
    assert outcomes(under_way) == {}
    nothing_tried = Script().prompt("What does login do?").injected("prompt", HINT).run("pytest").end()
    assert outcomes(nothing_tried) == {}


def test_the_brief_and_a_prompt_bear_on_the_first_episode_of_their_task() -> None:
    script = (
        Script()
        .injected("brief", VALUE)
        .prompt("The login test fails")
        .injected("prompt", HINT)
        .run("pytest", LOGIN)
        .edit("src/app.py")
        .run("pytest")
        .prompt("Now logout")
        .run("pytest", LOGOUT)
        .edit("src/app.py")
        .run("pytest", LOGOUT)
        .end()
    )
    assert outcomes(script) == {VALUE: ("s1-e4", True), HINT: ("s1-e4", True)}


def test_an_item_shown_in_a_task_without_episodes_is_not_given_the_next_tasks() -> None:
    script = (
        Script()
        .prompt("Rename the helper")
        .injected("prompt", HINT)
        .edit("src/util.py")
        .prompt("Now fix login")
        .run("pytest", LOGIN)
        .edit("src/app.py")
        .run("pytest")
    )
    assert outcomes(script) == {}
    # A reply with no work before it does not start a new task.
    reply = Script().prompt("Fix login").injected("prompt", HINT).prompt("go on").run("pytest", LOGIN)
    assert outcomes(reply.edit("src/app.py").run("pytest")) == {HINT: ("s1-e4", True)}


def test_a_prompt_during_an_episode_prefers_the_next_one_and_a_lesson_the_current() -> None:
    script = (
        Script()
        .run("mypy src", LOGOUT, kind="build", runner="mypy")
        .prompt("Also the login test")
        .injected("prompt", HINT)
        .injected("file_lesson", OTHER)
        .run("pytest", LOGIN)
        .edit("src/app.py")
        .run("pytest")
        .run("mypy src", LOGOUT, kind="build", runner="mypy")
        .end()
    )
    assert outcomes(script) == {HINT: ("s1-e5", True), OTHER: ("s1-e1", False)}


def test_an_item_shown_again_in_the_same_episode_counts_once() -> None:
    script = (
        Script()
        .run("pytest", LOGIN)
        .injected("fix_hint", HINT)
        .edit("src/app.py")
        .run("pytest", LOGIN)
        .injected("fix_hint", HINT, OTHER)
        .edit("src/app.py")
        .run("pytest")
    )
    records = attribute(script.events, mine(script.events))
    assert sorted((r.item, r.via, r.shown_at) for r in records) == [
        (HINT, "fix_hint", script.events[1].at),
        (OTHER, "fix_hint", script.events[4].at),
    ]


def feedback(item: str, episode_id: str, helped: bool) -> FeedbackRecord:
    return FeedbackRecord(item, episode_id, "fix_hint", helped, T0)


@pytest.fixture
def index(tmp_path: Path) -> FixIndex:
    return FixIndex(fix_index_path(tmp_path))


def record(index: FixIndex, session: str, *rows: FeedbackRecord) -> None:
    index.record_session(PROJECT, session, "/work/app", [], [], rows)


def test_mining_a_session_again_counts_nothing_twice(index: FixIndex) -> None:
    assert index.outcomes([HINT]) == {}  # no file yet: nothing, and nothing created
    assert not index.path.exists()
    record(index, "s1", feedback(HINT, "ep1", True), feedback(OTHER, "ep1", False))
    record(index, "s1", feedback(HINT, "ep1", True), feedback(OTHER, "ep1", False))
    assert index.outcomes([HINT, OTHER, VALUE]) == {HINT: Outcomes(1, 0), OTHER: Outcomes(0, 1)}
    record(index, "s2", feedback(HINT, "ep7", False))
    assert index.outcomes([HINT]) == {HINT: Outcomes(1, 1)}
    # The log grew and an episode was decided anew: the session's rows are replaced.
    record(index, "s1", feedback(HINT, "ep1", False))
    assert index.outcomes([HINT, OTHER]) == {HINT: Outcomes(0, 2)}
    record(index, "s1")
    assert index.outcomes([HINT, OTHER]) == {HINT: Outcomes(0, 1)}


def test_an_index_made_before_feedback_gains_its_table(index: FixIndex) -> None:
    record(index, "s1")
    with connect(index.path) as conn:
        conn.execute("DROP TABLE feedback")
        conn.execute("PRAGMA user_version = 1")
    assert index.outcomes([HINT]) == {}  # unreadable table: nothing, never an error
    record(index, "s1", feedback(HINT, "ep1", True))
    assert index.outcomes([HINT]) == {HINT: Outcomes(1, 0)}
    with sqlite3.connect(index.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_the_worker_reads_counts_by_id(tmp_path: Path) -> None:
    record(FixIndex(fix_index_path(tmp_path)), "s1", feedback(HINT, "ep1", True))
    assert await outcomes_for(tmp_path, [HINT, HINT, VALUE]) == {HINT: Outcomes(1, 0)}
    assert await outcomes_for(tmp_path / "none", [HINT]) == {}


def test_the_factor_nudges_and_never_buries() -> None:
    assert feedback_factor(Outcomes()) == 1.0
    assert feedback_factor(Outcomes(helped=5)) == 1.0
    one_miss = feedback_factor(Outcomes(not_helped=1))
    assert 0.85 < one_miss < 1.0
    assert feedback_factor(Outcomes(helped=1, not_helped=1)) > one_miss
    many = [feedback_factor(Outcomes(not_helped=n)) for n in range(1, 200, 20)]
    assert many == sorted(many, reverse=True) and min(many) > FLOOR


def test_the_recorder_logs_what_was_shown_once_each_and_bounded(tmp_path: Path) -> None:
    from learning_memory.server.capture.recorder import Recorder

    recorder = Recorder(tmp_path / "capture", tmp_path / "fixes.sqlite3")
    many = [HINT, HINT, "", *(f"mem:{n}" for n in range(30))]
    event = recorder.injected("s1", str(tmp_path), many, "prompt")
    assert event is not None and event.items[:2] == [HINT, "mem:0"] and len(event.items) == 20
    assert recorder.injected("", str(tmp_path), [HINT], "prompt") is None
    assert recorder.injected("s1", str(tmp_path), [], "prompt") is None


async def test_hits_are_given_their_counts(tmp_path: Path) -> None:
    from learning_memory.shared.contracts.learning import ClusterMember
    from learning_memory.worker.capture.feedback import with_outcomes

    record(FixIndex(fix_index_path(tmp_path)), "s1", feedback(HINT, "ep1", False))

    def member(ghap_id: str) -> ClusterMember:
        return ClusterMember(
            id="p",
            ghap_id=ghap_id,
            domain="debugging",
            strategy="read-the-error",
            goal="g",
            hypothesis="h",
            action="a",
            prediction="p",
            outcome_status="confirmed",
            outcome_result="r",
            confidence_tier="auto",
            score=0.5,
            created_at=T0,
        )

    hits = await with_outcomes(
        tmp_path, [member(HINT.removeprefix("exp:")), member(OTHER.removeprefix("exp:"))]
    )
    assert [(type(h), h.helped, h.not_helped, h.score) for h in hits] == [
        (ClusterMember, 0, 1, 0.5),
        (ClusterMember, 0, 0, 0.5),
    ]
