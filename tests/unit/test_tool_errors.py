from __future__ import annotations

import json

import pytest

from learning_memory.server.tool_errors import Running, _from_sdk_text, guarded
from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.errors import InternalError, NotFoundError, ValidationError


def _payload(result: object) -> dict[str, str]:
    text = result.content[0].text  # type: ignore[attr-defined]
    assert result.is_error  # type: ignore[attr-defined]
    return json.loads(text)["error"]  # type: ignore[no-any-return]


async def test_guarded_passes_results_through() -> None:
    @guarded
    async def fine(x: int) -> dict[str, int]:
        return {"x": x}

    assert await fine(3) == {"x": 3}


async def test_guarded_maps_our_errors() -> None:
    @guarded
    async def missing() -> None:
        raise NotFoundError("no such thing")

    assert _payload(await missing()) == {"type": "not_found", "message": "no such thing"}


async def test_guarded_hides_unexpected_errors(caplog: pytest.LogCaptureFixture) -> None:
    @guarded
    async def broken() -> None:
        raise RuntimeError("secret internals")

    error = _payload(await broken())
    assert error == {"type": "internal_error", "message": "Internal server error"}


async def test_guarded_turns_a_long_job_into_a_job_id() -> None:
    @guarded
    async def slow() -> None:
        raise JobStillRunning("abc123")

    result = await slow()
    assert isinstance(result, Running)
    assert result.status == "running"
    assert result.job_id == "abc123"
    assert "get_job_status" in result.message


def test_sdk_texts_are_mapped() -> None:
    assert isinstance(_from_sdk_text("Unknown tool: nope"), NotFoundError)
    validation = _from_sdk_text(
        "Error executing tool ping: 1 validation error for pingArguments\n"
        "delay_ms\n  Input should be an int [type=int_type, input_value='x', input_type=str]\n"
        "    For further information visit https://errors.pydantic.dev/"
    )
    assert isinstance(validation, ValidationError)
    assert (
        validation.message
        == "Invalid arguments for ping: 1 validation error for pingArguments delay_ms Input should be an int"
    )
    assert isinstance(_from_sdk_text("Error executing tool ping"), InternalError)
