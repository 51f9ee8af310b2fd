"""What a client reads of every tool, unchanged: the tool list (names, descriptions, input schemas)
and the answers of a fixed script of calls over every tool (text, structured content, error flag),
compared with the capture kept in ``tests/fixtures/tool_answers.json`` (see ``tests/tool_answers.py``
for how it is made, and how to write it anew when an answer is meant to change)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from tests.tool_answers import FIXTURE, capture, dumps


def test_every_tool_answers_as_captured(tmp_path: Path) -> None:
    answers = capture(tmp_path.resolve())
    listed = {tool["name"] for tool in answers[0]["tools"]}
    called = {answer["call"].split("#")[0] for answer in answers[1:]}
    assert listed <= called, f"tools the capture never calls: {sorted(listed - called)}"
    expected = FIXTURE.read_text()
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True), dumps(answers).splitlines(keepends=True), "kept", "now", n=2
        )
    )
    assert not diff, f"answers differ from {FIXTURE.name}:\n{diff[:20_000]}"
    assert json.loads(expected) == answers
