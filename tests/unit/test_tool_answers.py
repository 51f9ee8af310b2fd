"""What a client reads of every tool, unchanged and as its output schema says.

One run of the script in ``tests/tool_answers.py`` (every tool, through an in-process MCP client)
serves both tests: the answers compared with the capture kept in
``tests/fixtures/tool_answers.json`` (see that module for writing it anew when an answer is meant to
change), and every answer received, a "running" one and errors included, checked against the
output schema its tool lists.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

import jsonschema
import pytest

import learning_memory.server.tools  # noqa: F401  (declares every tool)
from learning_memory.server.tool_registry import DECLARED
from tests.tool_answers import FIXTURE, Capture, capture, dumps

# RFC 3339, as clients check "format": "date-time" (Claude Code's ajv): an offset is required.
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", re.IGNORECASE)
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time")
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(RFC3339.match(value))


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return capture(tmp_path_factory.mktemp("answers").resolve())


def test_every_tool_answers_as_captured(captured: Capture) -> None:
    answers = captured.answers
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


def _arms(schema: dict[str, Any]) -> set[str]:
    return {arm["$ref"].rsplit("/", 1)[-1] for arm in schema["anyOf"]}


def test_every_answer_is_what_its_output_schema_says(captured: Capture) -> None:
    schemas = captured.output_schemas
    assert set(schemas) == set(DECLARED)
    for name, schema in schemas.items():
        assert schema is not None, name
        assert schema["type"] == "object", name
        arms = _arms(schema)
        assert "ToolFailure" in arms, name
        assert ("Running" in arms) is not DECLARED[name].instant, name
    kinds = {"answer": 0, "running": 0, "error": 0}
    for tool, result in captured.received:
        if tool not in schemas:
            continue  # an unknown tool's error: no schema to answer to
        schema = schemas[tool]
        assert schema is not None, tool
        validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            # An error is text only (isError: true): clients check structured content on success.
            assert result.structured_content is None, tool
            validator.validate(json.loads(text))
            kinds["error"] += 1
            continue
        structured = result.structured_content
        assert isinstance(structured, dict), tool
        validator.validate(structured)
        # Never wrapped ({"result": ...}): Claude Code shows the model this JSON, not the text.
        if tool.startswith("hook_"):
            assert structured == (json.loads(text) if text else {}), tool
        else:
            assert json.loads(text) == structured, tool
        kinds["running" if structured.get("status") == "running" else "answer"] += 1
    assert all(kinds.values()), kinds
