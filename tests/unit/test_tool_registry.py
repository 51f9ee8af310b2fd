"""How tools are declared and what their answers are made of: module-level functions found by
name, registered in a fixed order, answers picked from the contracts' models."""

from __future__ import annotations

import sys
import types
from datetime import UTC, datetime
from typing import Literal

import pytest
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

import learning_memory.server.tools as tools
from learning_memory.server.tool_answers import Answer, IsoformatTimes, Results, omitted
from learning_memory.server.tool_errors import Running
from learning_memory.server.tool_registry import DECLARED, as_result, register, tool
from learning_memory.shared.contracts.experiences import GhapEntry

NOW = datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=UTC)
ENTRY = GhapEntry(
    id="e1",
    session_id="s",
    domain="testing",
    strategy="ask-user",
    goal="g",
    hypothesis="h",
    action="a",
    prediction="p",
    created_at=NOW,
    updated_at=NOW,
)


def test_every_tool_is_a_module_level_function_named_like_the_tool() -> None:
    assert len(DECLARED) >= 38
    modules = {module.__name__ for module in tools.MODULES}
    for name, declared in DECLARED.items():
        assert declared.fn.__name__ == name, name
        assert declared.fn.__module__ in modules, name
        # Found by name in its module: `grep "async def <tool>"` finds it.
        assert getattr(sys.modules[declared.fn.__module__], name) is declared.fn, name


def test_a_name_is_declared_once() -> None:
    async def ping() -> Running:
        return Running(job_id="x")

    with pytest.raises(ValueError, match="declared twice"):
        tool("ping", description="again")(ping)


def test_tools_outside_the_registered_modules_are_refused() -> None:
    async def stray_tool() -> Running:
        return Running(job_id="x")

    stray_tool.__module__ = "somewhere.else"
    tool("stray_tool", description="not in a tool module")(stray_tool)
    try:
        with pytest.raises(ValueError, match="stray_tool"):
            register(MCPServer("test"), tools.MODULES)
    finally:
        del DECLARED["stray_tool"]


def test_a_module_registers_its_tools_in_declaration_order() -> None:
    module = types.ModuleType("a_tool_module")

    async def second() -> Running:
        return Running(job_id="2")

    async def first() -> Running:
        return Running(job_id="1")

    for fn, name in ((second, "zz_second"), (first, "aa_first")):
        fn.__module__ = module.__name__
        tool(name, description=name)(fn)
    server = MCPServer("test")
    try:
        register(server, [module, *tools.MODULES])
    finally:
        del DECLARED["zz_second"], DECLARED["aa_first"]
    names = [t.name for t in server._tool_manager.list_tools()]
    assert names[:2] == ["zz_second", "aa_first"]


class Card(IsoformatTimes, of=GhapEntry, fields=("id", "goal", "created_at")):
    note: str | None = omitted()


class Absent(Answer, of=GhapEntry, fields=("id", "goal"), null=True):
    present: Literal[False] = False


_NOT_STORY = ("session_id", "updated_at", "iterations", "evidence", "resolution")


class Story(
    Answer,
    of=GhapEntry,
    exclude=(*_NOT_STORY, "source", "anchors", "occurrences", "last_seen", "project"),
):
    pass


def test_an_answer_picks_its_fields_from_a_model_in_order() -> None:
    assert list(Card.model_fields) == ["id", "goal", "created_at", "note"]
    card = Card.pick(ENTRY)
    assert card.model_dump(mode="json") == {
        "id": "e1",
        "goal": "g",
        "created_at": "2026-03-01T09:30:00.123456+00:00",
    }
    assert Card.pick(ENTRY, note="n", goal="other").model_dump(mode="json")["goal"] == "other"
    assert Absent().model_dump(mode="json") == {"id": None, "goal": None, "present": False}
    assert list(Story.model_fields) == [
        "id",
        "domain",
        "strategy",
        "goal",
        "hypothesis",
        "action",
        "prediction",
        "created_at",
    ]
    # The picked field keeps its model's type: a bad value is refused.
    with pytest.raises(ValueError):
        Story.pick(ENTRY, domain="cooking")


def test_picking_a_field_the_model_lacks_fails_at_once() -> None:
    with pytest.raises(TypeError, match="GhapEntry has no field nope"):

        class Broken(Answer, of=GhapEntry, fields=("id", "nope")):
            pass


class Listed(Results[Card]):
    pass


def test_an_answer_is_its_json_as_structured_content_and_as_text() -> None:
    result = as_result(Listed.of([Card.pick(ENTRY)]))
    assert result.structured_content == {
        "results": [{"id": "e1", "goal": "g", "created_at": "2026-03-01T09:30:00.123456+00:00"}],
        "count": 1,
    }
    assert result.content[0].text.startswith('{\n  "results": [\n    {\n      "id": "e1"')  # type: ignore[union-attr]
    assert not result.is_error


class Nulls(BaseModel):
    kept: str | None = None
    inner: Card | None = None


def test_omit_none_leaves_out_every_none_nested_ones_too() -> None:
    inner = Card.pick(ENTRY)
    dumped = inner.model_dump(mode="json")
    answer = Nulls(inner=inner)
    assert as_result(answer).structured_content == {"kept": None, "inner": dumped}
    assert as_result(answer, omit_none=True).structured_content == {"inner": dumped}
