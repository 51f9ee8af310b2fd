"""The Claude Code driver's own parts, without Claude Code: the scripted model over HTTP, the
debug-log reader and the reading of hook context from a request."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Generator
from pathlib import Path
from typing import Any

from tests.support.claude_code import Session
from tests.support.claude_debug_log import hook_timings, label_unnamed
from tests.support.scripted_model import (
    DONE_REPLY,
    SIDE_REPLY,
    Request,
    ScriptedModel,
    ToolUse,
    Turn,
    call,
    last_tool_result,
    say,
)


def _post(url: str, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.headers["Content-Type"], answer.read()


def _sse(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


TURN = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Bash"}]}


def test_the_script_answers_turns_in_order_and_then_says_done() -> None:
    with ScriptedModel([call("Bash", command="ls"), say("finished")]) as model:
        _, first = _post(model.url, "/v1/messages", TURN)
        _, side = _post(model.url, "/v1/messages", {"model": "m", "messages": []})
        _, second = _post(model.url, "/v1/messages?beta=true", TURN)
        _, third = _post(model.url, "/v1/messages", TURN)
        _, counted = _post(model.url, "/v1/messages/count_tokens", TURN)
    message = json.loads(first)
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0]["name"] == "Bash" and message["content"][0]["input"] == {"command": "ls"}
    # A side call (no tools) gets a short text and does not use up the script.
    assert json.loads(side)["content"] == [{"type": "text", "text": SIDE_REPLY}]
    assert json.loads(second)["content"][0]["text"] == "finished"
    assert json.loads(third)["content"][0]["text"] == DONE_REPLY
    assert json.loads(counted)["input_tokens"] > 0
    assert len(model.requests) == 5 and len(model.main_requests()) == 3


def test_streaming_sends_each_block_as_events() -> None:
    turn = Turn("running it", (ToolUse("Bash", {"command": "pytest -q"}),))
    with ScriptedModel([turn]) as model:
        kind, raw = _post(model.url, "/v1/messages", {**TURN, "stream": True})
    assert kind == "text/event-stream"
    events = _sse(raw)
    assert events[0]["type"] == "message_start"
    assert events[-1]["type"] == "message_stop"
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[0] == {"type": "text_delta", "text": "running it"}
    assert json.loads(deltas[1]["partial_json"]) == {"command": "pytest -q"}
    stop = next(e for e in events if e["type"] == "message_delta")
    assert stop["delta"]["stop_reason"] == "tool_use"


LOG = """\
2026-11-23T18:29:22.745Z [DEBUG] Hooks: SessionStart:startup ["/p/bin/learning-memory-hook" session-start] \
(plugin learning-memory@learning-memory) finished with status 0 (98ms)
2026-11-23T18:29:22.745Z [DEBUG] Hook output does not start with {, treating as plain text
2026-11-23T18:29:23.512Z [DEBUG] Hooks: mcp_tool calling plugin:a:b/ping with 0 arg(s)
2026-11-23T18:29:23.513Z [DEBUG] Hooks: mcp_tool calling plugin:a:b/hook_prompt_context with 3 arg(s)
2026-11-23T18:29:23.523Z [DEBUG] Hooks: UserPromptSubmit [echo '{}'] finished with status 0 (12ms)
2026-11-23T18:29:23.523Z [DEBUG] "Hook UserPromptSubmit (UserPromptSubmit) success:\\n{}"
2026-11-23T18:29:23.524Z [DEBUG] Hook UserPromptSubmit (echo '{}') provided additionalContext (10 chars)
2026-11-23T18:29:23.638Z [DEBUG] Hook JSON output had unrecognized keys (ignored): status.
2026-11-23T18:29:23.641Z [DEBUG] "Hook UserPromptSubmit (UserPromptSubmit) success:\\n{\\"status\\": 1}"
2026-11-23T18:29:23.642Z [ERROR] "Hook UserPromptSubmit (UserPromptSubmit) error: status code 1\\nstdout:\\n"
2026-11-23T18:29:24.327Z [DEBUG] Hooks: mcp_tool calling plugin:a:b/hook_tool_outcome with 6 arg(s)
2026-11-23T18:29:24.342Z [DEBUG] "Hook PostToolUseFailure:Bash (PostToolUseFailure) success:\\n{}"
2026-11-23T18:29:24.342Z [DEBUG] Hook PostToolUseFailure (plugin:a:b/hook_tool_outcome) provided \
additionalContext (9 chars)
2026-11-23T18:29:24.402Z [DEBUG] Hooks: mcp_tool calling plugin:a:b/hook_stop with 3 arg(s)
2026-11-23T18:29:24.412Z [DEBUG] Hook output does not start with {, treating as plain text
2026-11-23T18:29:24.500Z [DEBUG] Hooks: mcp_tool calling plugin:a:b/hook_stop with 3 arg(s)
"""


def test_hook_timings_pair_interleaved_lines() -> None:
    timings = [(t.kind, t.name, t.label, t.ms, t.outcome) for t in hook_timings(LOG)]
    assert timings == [
        ("command", '"/p/bin/learning-memory-hook" session-start', "SessionStart:startup", 98.0, "status 0"),
        ("mcp_tool", "ping", "UserPromptSubmit", 126.0, "success"),
        ("mcp_tool", "hook_prompt_context", "UserPromptSubmit", 129.0, "error"),
        ("command", "echo '{}'", "UserPromptSubmit", 12.0, "status 0"),
        ("mcp_tool", "hook_tool_outcome", "PostToolUseFailure:Bash", 15.0, "success"),
        ("mcp_tool", "hook_stop", "", 10.0, "success"),
        ("mcp_tool", "hook_stop", "", None, "open"),
    ]


def test_unnamed_runs_are_labelled_from_the_plugin_hooks() -> None:
    config = json.loads((Path(__file__).resolve().parents[2] / "plugin/hooks/hooks.json").read_text())
    timings = hook_timings(LOG)
    label_unnamed(timings, config)
    assert [t.label for t in timings if t.name == "hook_stop"] == ["Stop", "Stop"]


def test_hook_contexts_are_read_from_system_messages_and_reminders(tmp_path: Path) -> None:
    body = {
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Bash"}],
        "messages": [
            {
                "role": "user",
                "content": "<system-reminder>\nSessionStart hook additional context: brief\nline two\n"
                "</system-reminder>\nhi",
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
            {
                "role": "system",
                "content": [
                    {
                        "type": "text",
                        "text": "PostToolUse:Bash hook additional context: 1 passed\n\n"
                        "UserPromptSubmit hook additional context: related\n\n"
                        "Stop hook feedback:\nstill active",
                    }
                ],
            },
        ],
    }
    session = Session(0, "", "", [Request("/v1/messages", body)], tmp_path / "none.log")
    assert session.hook_contexts() == ["brief\nline two", "1 passed", "related"]
    assert session.hook_contexts("PostToolUse:Bash") == ["1 passed"]
    assert session.tool_results() == ["ok"]
    assert session.stop_feedback() == ["still active"]
    assert session.hook_timings() == []


def test_a_generator_script_sees_each_tool_result() -> None:
    seen: list[str] = []

    def script() -> Generator[Turn, Request, None]:
        request = yield call("Bash", command="echo 41", text="a tool argument, not the turn's text")
        seen.append(last_tool_result(request))
        yield say(f"it said {seen[0]}")

    result = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "41"}]}
    with ScriptedModel(script()) as model:
        _, first = _post(model.url, "/v1/messages", TURN)
        answered = _post(
            model.url, "/v1/messages", {**TURN, "messages": [{"role": "user", "content": [result]}]}
        )
        _, last = _post(model.url, "/v1/messages", TURN)
    assert json.loads(answered[1])["content"][0]["text"] == "it said 41"
    assert json.loads(first)["content"][0]["input"]["text"] == "a tool argument, not the turn's text"
    assert json.loads(last)["content"][0]["text"] == DONE_REPLY


def test_a_failing_script_ends_the_session_and_is_kept() -> None:
    def script() -> Generator[Turn, Request, None]:
        request = yield call("Bash", command="true")
        raise KeyError(last_tool_result(request) or "nothing")

    with ScriptedModel(script()) as model:
        _post(model.url, "/v1/messages", TURN)
        _, answer = _post(model.url, "/v1/messages", TURN)
    assert json.loads(answer)["stop_reason"] == "end_turn"
    assert [type(e) for e in model.script_errors] == [KeyError]
