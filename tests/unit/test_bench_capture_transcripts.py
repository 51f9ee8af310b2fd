"""The transcript reader of ``bench capture``: which hook events a session's JSONL file fired."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.capture.transcripts import HookEvent, prompt_of, read_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
FIRST = FIXTURES / "rounding-fix.jsonl"
SECOND = FIXTURES / "discounts-same-failure.jsonl"
RED = "toolu_01ima7XsORqfHI66rUhKA4km"
EDIT = "toolu_015ditE09OmbRWjNKEbDbpeh"
GREEN = "toolu_018lo0wyLqnycr1FGoxuPsrL"


def _names(events: list[HookEvent]) -> list[str]:
    return [e.name if "tool_name" not in e.input else f"{e.name}:{e.input['tool_name']}" for e in events]


def _write(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _user(content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": "s1",
        "cwd": "/p",
        "message": {"role": "user", "content": content},
        **extra,
    }


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": "s1", "cwd": "/p", "message": {"content": list(blocks)}}


def test_a_fix_session_fires_prompt_failure_edit_success_stop_and_end() -> None:
    transcript = read_transcript(FIRST)

    assert transcript.session_id == "7d3f0c2e-5b1a-4c8e-9f42-1a6b3c9d0e11"
    assert transcript.cwd == "/home/dev/src/invoice-api"
    assert _names(transcript.events) == [
        "UserPromptSubmit",
        "PostToolUseFailure:Bash",
        "PostToolUse:Read",
        "PostToolUse:Edit",
        "PostToolUse:Bash",
        "Stop",
        "SessionEnd",
    ]
    for event in transcript.events:
        assert event.input["session_id"] == transcript.session_id
        assert event.input["transcript_path"] == str(FIRST)
        assert event.input["hook_event_name"] == event.name
        assert event.input["cwd"] == "/home/dev/src/invoice-api"


def test_a_failed_bash_run_carries_claude_codes_error_text() -> None:
    failed = read_transcript(FIRST).events[1]

    assert failed.input["tool_use_id"] == RED
    assert failed.input["tool_input"]["command"] == "python -m pytest -q tests/test_totals.py"
    assert failed.input["error"].startswith("Exit code 1\n")
    assert "FAILED tests/test_totals.py::test_rounding" in failed.input["error"]
    assert "tool_response" not in failed.input


def test_successful_runs_and_edits_carry_the_structured_result() -> None:
    events = {e.input.get("tool_use_id"): e for e in read_transcript(FIRST).events}

    green = events[GREEN].input["tool_response"]
    assert green["stdout"].endswith("4 passed in 0.07s") and green["interrupted"] is False
    edit = events[EDIT].input
    assert edit["tool_input"]["file_path"] == "/home/dev/src/invoice-api/src/invoice/totals.py"
    assert edit["tool_response"]["structuredPatch"][0]["newLines"] == 4
    assert edit["duration_ms"] >= 0


def test_a_compaction_fires_precompact_and_its_summary_is_no_prompt() -> None:
    transcript = read_transcript(SECOND)
    names = _names(transcript.events)

    assert names.count("PreCompact") == 1
    assert transcript.events[names.index("PreCompact")].input["trigger"] == "auto"
    prompts = [e.input["prompt"] for e in transcript.events if e.name == "UserPromptSubmit"]
    assert prompts == ["Add a percentage discount to invoices, with a test.", "Thanks. Commit it."]
    assert names.count("Stop") == 2 and names[-1] == "SessionEnd"
    stats = transcript.stats
    assert (stats.prompts, stats.turns, stats.compactions) == (2, 2, 1)
    assert (stats.test_runs, stats.failed_test_runs, stats.edits, stats.tool_uses["Bash"]) == (2, 1, 3, 3)


def test_what_is_not_typed_is_no_prompt() -> None:
    assert prompt_of(_user("fix the build")) == "fix the build"
    assert prompt_of(_user([{"type": "text", "text": "fix it"}])) == "fix it"
    assert prompt_of(_user("skill body", isMeta=True)) is None
    assert prompt_of(_user("summary", isCompactSummary=True)) is None
    assert prompt_of(_user("<local-command-stdout>done</local-command-stdout>")) is None
    assert prompt_of(_user("<task-notification>\n<task-id>b1</task-id>")) is None
    assert prompt_of(_user([{"type": "text", "text": "[Request interrupted by user]"}])) is None
    assert prompt_of(_user([{"type": "tool_result", "tool_use_id": "t", "content": "x"}])) is None
    assert prompt_of(_user("x", origin={"kind": "task-notification"})) is None
    command = "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
    assert prompt_of(_user(command + "<command-args>src/app.py</command-args>")) == "/review src/app.py"


def test_an_interrupted_turn_fires_no_stop(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _user("start the server", uuid="u1"),
            _assistant({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sleep 100"}}),
            _user([{"type": "tool_result", "tool_use_id": "t1", "content": "Interrupted", "is_error": True}]),
            _user([{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
            _user("run the tests instead", uuid="u2"),
            _assistant({"type": "text", "text": "Running them."}),
        ],
    )

    assert _names(read_transcript(path).events) == [
        "UserPromptSubmit",
        "PostToolUseFailure:Bash",
        "UserPromptSubmit",
        "Stop",
        "SessionEnd",
    ]


def test_repeated_lines_results_without_a_call_and_bad_lines_are_skipped(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _user("hello there", uuid="u1"),
            _user("hello there", uuid="u1"),  # a resumed session repeats what it continues
            _user([{"type": "tool_result", "tool_use_id": "unknown", "content": "x"}], uuid="u3"),
        ],
    )
    with path.open("a") as out:
        out.write("{not json\n")
    transcript = read_transcript(path)

    assert _names(transcript.events) == ["UserPromptSubmit", "SessionEnd"]
    assert transcript.stats.unreadable_lines == 1 and transcript.stats.lines == 4


def test_a_bash_result_without_structured_output_gets_stdout_from_its_text(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _user("list files", uuid="u1"),
            _assistant({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}),
            _user(
                [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a\nb"}]}]
            ),
        ],
    )
    result = read_transcript(path).events[1].input

    assert result["tool_response"] == {"stdout": "a\nb", "stderr": "", "interrupted": False, "isImage": False}
