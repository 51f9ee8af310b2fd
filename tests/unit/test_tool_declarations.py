"""Every tool the server lists is declared through ``server.tool_registry.tool`` (and so guarded by
``server.tool_errors``): a failure inside any of them answers our error shape with its own type,
never the SDK's text relabelled."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import learning_memory.server.tools
from learning_memory.shared.errors import UnavailableError
from tests.mcp_thread import inline_settings

FAILURE = "the services are away (a test's doing)"


def _value(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A value the schema accepts, so the call gets past the SDK's argument check."""
    if "$ref" in schema:
        return _value(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _value(schema["anyOf"][0], defs)
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        return {
            name: _value(prop, defs)
            for name, prop in schema.get("properties", {}).items()
            if name in required
        }
    # A uuid passes the tools that check an id's form before anything else.
    text = "00000000-0000-4000-8000-000000000000"
    return {"string": text, "integer": 1, "number": 1.0, "boolean": True, "array": []}.get(str(kind), text)


def _away(ctx: object) -> Any:
    raise UnavailableError(FAILURE)


async def test_every_listed_tool_answers_its_own_failure_in_our_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from learning_memory.composition import build_server

    for module_info in pkgutil.iter_modules(learning_memory.server.tools.__path__):
        importlib.import_module(f"learning_memory.server.tools.{module_info.name}")
    # Wherever a tool reaches for the server's services, they fail.
    for name, module in list(sys.modules.items()):
        if name.startswith("learning_memory.server.") and hasattr(module, "app_services"):
            monkeypatch.setattr(module, "app_services", _away)
    answers: dict[str, tuple[str, str]] = {}
    async with Client(build_server(inline_settings(tmp_path))) as client:
        listed = (await client.list_tools()).tools
        for listed_tool in listed:
            schema = listed_tool.input_schema
            arguments = _value(schema, schema.get("$defs", {}))
            result = await client.call_tool(listed_tool.name, arguments)
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            if not result.is_error:
                answers[listed_tool.name] = ("ok", text[:60])
                continue
            error = json.loads(text)["error"]
            answers[listed_tool.name] = (error["type"], error["message"][:60])
    assert len(listed) >= 31
    # Each failed with our error, of its own type: the services' failure, or an argument the tool
    # itself checks first; never the SDK's wording relabelled, never an internal error.
    assert {
        name: kind
        for name, (kind, _) in answers.items()
        if kind not in ("unavailable", "validation_error", "not_found")
    } == {}
    for name, (_, message) in answers.items():
        assert not message.startswith("Invalid arguments for"), name
    assert sum(message == FAILURE[:60] for _, message in answers.values()) >= len(listed) - 8
