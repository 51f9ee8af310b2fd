"""The recorded Claude Code sessions of ``tests/fixtures/transcripts/claude-code``: the transcript
reader gives back the hook inputs Claude Code really sent (logged by a user hook while they were
recorded), the plugin's hooks would make the same calls from either, and the labels hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.capture import record_project
from bench.capture.hooks import calls_for, load_hooks
from bench.capture.record import PYTEST, plans
from bench.capture.runner import prepare
from bench.capture.scoring import LABELS_JSON, labelled, load_labels, sha256
from bench.capture.transcripts import read_transcript

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude-code"
SESSIONS = sorted(RECORDED.glob("*.jsonl"))
# What Claude Code puts in a hook input that its transcript does not keep: how long the tool ran
# (the reader can only time the gap between the call's and the result's lines), the effort level
# and a Stop's background tasks and crons.
NOT_IN_TRANSCRIPTS = frozenset(
    {"transcript_path", "duration_ms", "effort", "background_tasks", "session_crons"}
)


def _real_inputs(session: Path) -> list[dict[str, Any]]:
    lines = (RECORDED / "hook-inputs" / session.name).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _without(hook_input: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in hook_input.items() if k not in NOT_IN_TRANSCRIPTS}


def test_the_recorded_sessions_are_all_there() -> None:
    assert [p.stem for p in SESSIONS] == [plan.name for plan in plans(dict.fromkeys("abc", Path("/x")))]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.stem)
def test_the_reader_gives_the_hook_inputs_claude_code_sent(session: Path) -> None:
    read = [event.input for event in read_transcript(session).events]
    real = _real_inputs(session)
    assert [e["hook_event_name"] for e in read] == [e["hook_event_name"] for e in real]
    for got, sent in zip(read, real, strict=True):
        assert _without(got) == _without(sent)


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.stem)
def test_the_plugin_hooks_make_the_same_calls_from_either(session: Path) -> None:
    hooks = load_hooks()
    read = [call for event in read_transcript(session).events for call in calls_for(hooks, event.input)]
    real = [call for hook_input in _real_inputs(session) for call in calls_for(hooks, hook_input)]
    assert read == real
    assert read, "no hook call at all"


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.stem)
def test_the_labels_name_runs_that_went_as_labelled(session: Path) -> None:
    transcript = read_transcript(session)
    label = labelled(load_labels(LABELS_JSON), transcript.session_id, sha256(session))
    assert label is not None, f"{session.name} is not labelled (or was recorded again)"
    outcome = {e.input["tool_use_id"]: e.name for e in transcript.events if "tool_use_id" in e.input}
    for episode in label["episodes"]:
        for red in [episode["red"], *episode.get("reds", [])]:
            assert outcome[red] == "PostToolUseFailure"
        for green in [g for g in [episode.get("green"), *episode.get("greens", [])] if g]:  # none: ended red
            assert outcome[green] == "PostToolUse"
        edited = {
            str(e.input["tool_input"]["file_path"]).removeprefix(transcript.cwd + "/")
            for e in transcript.events
            if e.input.get("tool_name") in ("Edit", "Write")
        }
        assert set(episode["fix_files"]) <= edited
    for failure in label["recurring_failures"]:
        assert outcome[failure["tool_use_id"]] == "PostToolUseFailure"


def test_a_recurring_failure_is_labelled_in_the_other_worktree_s_session() -> None:
    labels = load_labels(LABELS_JSON)
    first, again = (read_transcript(p) for p in SESSIONS[:2])
    recurring = labels[again.session_id]["recurring_failures"]
    assert [r["first_seen"]["session_id"] for r in recurring] == [first.session_id]
    assert first.cwd != again.cwd


def test_the_project_has_a_bug_for_each_session(tmp_path: Path) -> None:
    trees = record_project.make_project(tmp_path)
    assert sorted(trees) == ["a", "b", "c"]
    branches = {record_project.git(tree, "branch", "--show-current").strip() for tree in trees.values()}
    assert branches == {"main", "feature", "chore"}
    for tree in trees.values():
        assert record_project.CART_BUG in (tree / "shop" / "cart.py").read_text()
        assert record_project.DISCOUNT_BUG in (tree / "shop" / "discount.py").read_text()
        assert record_project.TAX_BUG in (tree / "shop" / "tax.py").read_text()
        assert record_project.INVENTORY_BUG in (tree / "shop" / "inventory.py").read_text()
    assert PYTEST.startswith("python -m pytest")


def test_no_path_of_the_recording_reaches_a_hook_call(tmp_path: Path) -> None:
    """The sessions ran under a temporary folder; replayed, every path in a call is the replay's."""
    recorded_under = str(Path(read_transcript(SESSIONS[0]).cwd).parent)
    hooks = load_hooks()
    sessions = prepare(SESSIONS, tmp_path, 2)
    assert [s.worktree.name for s in sessions] == ["wt0", "wt1"] * 3 + ["wt0"]
    arguments = [
        json.dumps(call.arguments) for s in sessions for e in s.events for call in calls_for(hooks, e.input)
    ]
    assert arguments and not [a for a in arguments if recorded_under in a]
    assert any(str(sessions[1].worktree) in a for a in arguments)
