"""The hook calls ``bench capture`` builds from the plugin's hooks.json, as Claude Code 2.1.330 does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.capture.hooks import HOOKS_JSON, calls_for, load_hooks, matches, substitute
from bench.capture.transcripts import read_transcript
from bench.capture.worktrees import Materializer, make_repository, moved_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def test_placeholders_take_the_value_at_a_dotted_path() -> None:
    hook_input = {"tool_input": {"command": "pytest -q"}, "n": 3, "x": 1.5, "whole": 2.0, "ok": False}
    template = {"a": "${tool_input.command}", "b": "n=${n} x=${x} w=${whole} ok=${ok}", "c": 7}

    assert substitute(template, hook_input) == {"a": "pytest -q", "b": "n=3 x=1.5 w=2 ok=false", "c": 7}


def test_missing_null_and_non_object_steps_give_nothing() -> None:
    hook_input = {"tool_response": None, "s": "text", "z": None}

    assert substitute("[${missing}|${tool_response.stdout}|${s.length}|${z}]", hook_input) == "[|||]"


def test_objects_and_arrays_are_compact_json_and_templates_are_filled_at_any_depth() -> None:
    hook_input = {"tool_response": {"structuredPatch": [{"oldStart": 1, "lines": ["+é"]}]}}
    template = {"outer": {"patch": "${tool_response.structuredPatch}"}, "list": ["${tool_response}"]}

    filled = substitute(template, hook_input)

    assert filled["outer"]["patch"] == '[{"oldStart":1,"lines":["+é"]}]'
    assert json.loads(filled["list"][0]) == hook_input["tool_response"]


def test_text_that_only_looks_like_a_placeholder_is_kept() -> None:
    assert substitute("${1abc} $x ${a-b} ${}", {"1abc": "no"}) == "${1abc} $x ${a-b} ${}"


@pytest.mark.parametrize(
    ("matcher", "value", "expected"),
    [
        (None, "Bash", True),
        ("", "Bash", True),
        ("*", "Edit", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),  # a name list is exact
        ("Edit|Write|MultiEdit", "Write", True),
        ("Edit|Write|MultiEdit", "NotebookEdit", False),
        ("mcp__.*", "mcp__github__get_me", True),  # anything else is a regular expression
        ("Edit.*", "NotebookEdit", True),  # searched for, not anchored
        ("^Edit$", "NotebookEdit", False),
        ("[", "Bash", False),  # an invalid one runs nothing
        ("Bash", None, True),  # events without a match value ignore matchers
    ],
)
def test_matchers(matcher: str | None, value: str | None, expected: bool) -> None:
    assert matches(matcher, value) is expected


def _calls(hook_input: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.tool, c.arguments) for c in calls_for(load_hooks(HOOKS_JSON), hook_input)]


def _hook(tool: str, **template: str) -> dict[str, Any]:
    return {"type": "mcp_tool", "server": "plugin:p:s", "tool": tool, "input": template, "timeout": 5}


# The shape of the plugin's hooks.json, fixed here so that the test does not follow its changes.
HOOKS: dict[str, list[dict[str, Any]]] = {
    "SessionStart": [{"hooks": [{"type": "command", "command": "start"}]}],
    "UserPromptSubmit": [{"hooks": [_hook("prompt", prompt="${prompt}")]}],
    "PostToolUse": [
        {"matcher": "Bash", "hooks": [_hook("outcome", output="${tool_response.stdout}")]},
        {"matcher": "Edit|Write", "hooks": [_hook("changed", patch="${tool_response.structuredPatch}")]},
    ],
    "PostToolUseFailure": [{"matcher": "Bash", "hooks": [_hook("outcome", error="${error}")]}],
    "Stop": [{"matcher": "ignored", "hooks": [_hook("stop", active="${stop_hook_active}")]}],
    "SessionEnd": [{"matcher": "other", "hooks": [_hook("end", reason="${reason}")]}],
}


def test_a_replayed_sessions_calls_follow_the_hooks_object() -> None:
    transcript = read_transcript(FIXTURES / "rounding-fix.jsonl")

    calls = [(c.event, c.tool, c.arguments) for e in transcript.events for c in calls_for(HOOKS, e.input)]

    assert [(event, tool) for event, tool, _ in calls] == [
        ("UserPromptSubmit", "prompt"),
        ("PostToolUseFailure", "outcome"),
        ("PostToolUse", "changed"),  # the Read matches no group
        ("PostToolUse", "outcome"),
        ("Stop", "stop"),  # Stop ignores matchers
        ("SessionEnd", "end"),
    ]
    assert calls[2][2]["patch"].startswith('[{"oldStart":22,')
    assert calls[4][2] == {"active": "false"} and calls[5][2] == {"reason": "other"}


def test_every_mcp_tool_hook_of_hooks_json_is_built_with_its_own_input_template() -> None:
    hooks = load_hooks(HOOKS_JSON)
    transcript = read_transcript(FIXTURES / "discounts-same-failure.jsonl")
    for event in transcript.events:
        for call in calls_for(hooks, event.input):
            groups = hooks[event.name]
            templates = [h["input"] for g in groups for h in g["hooks"] if h.get("tool") == call.tool]
            assert any(substitute(t, event.input) == call.arguments for t in templates)
            assert call.server == "plugin:learning-memory:learning-memory" and call.timeout_s == 5


def test_a_failed_run_sends_the_error_and_a_passing_run_its_output() -> None:
    failed, passed = (
        e
        for e in read_transcript(FIXTURES / "rounding-fix.jsonl").events
        if e.input.get("tool_name") == "Bash"
    )

    arguments = dict(_calls(failed.input))["hook_tool_outcome"]
    assert arguments["event"] == "PostToolUseFailure"
    assert (
        arguments["error"].startswith("Exit code 1\n")
        and arguments["tool_use_id"] == failed.input["tool_use_id"]
    )
    arguments = dict(_calls(passed.input))["hook_tool_outcome"]
    assert arguments["event"] == "PostToolUse" and arguments["output"].endswith("4 passed in 0.07s")
    assert arguments["stderr"] == "" and arguments["session_id"] == "7d3f0c2e-5b1a-4c8e-9f42-1a6b3c9d0e11"


def test_a_moved_session_points_into_its_worktree_and_writes_its_files_there(tmp_path: Path) -> None:
    worktrees = make_repository(tmp_path, 2)
    transcript = read_transcript(FIXTURES / "rounding-fix.jsonl")
    events = moved_events(transcript.events, transcript.cwd, worktrees[1], tmp_path / "t.jsonl")
    materializer = Materializer(worktrees[1])
    for event in events:
        materializer.apply(event)

    assert all(e.input["cwd"] == str(worktrees[1]) for e in events)
    edit = next(e for e in events if e.input.get("tool_name") == "Edit")
    totals = worktrees[1] / "src" / "invoice" / "totals.py"
    assert edit.input["tool_input"]["file_path"] == str(totals)
    assert "Round once, on the sum" in totals.read_text()
    assert (materializer.counts.created, materializer.counts.updated) == (1, 1)  # read whole, then edited
    assert (worktrees[1] / ".git").is_file()  # a linked worktree of one repository
