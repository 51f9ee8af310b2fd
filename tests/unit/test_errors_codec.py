from __future__ import annotations

from datetime import UTC, datetime

import pytest

from learning_memory.shared import codec
from learning_memory.shared.errors import (
    ERROR_TYPES,
    InternalError,
    JobTimeoutError,
    LmsError,
    NotFoundError,
    UnavailableError,
    ValidationError,
    from_payload,
)


@pytest.mark.parametrize("cls", [ValidationError, NotFoundError, UnavailableError, JobTimeoutError])
def test_payload_round_trip(cls: type[LmsError]) -> None:
    error = cls("something specific")
    back = from_payload(error.to_payload())
    assert type(back) is cls
    assert back.message == "something specific"
    assert error.to_payload() == {"error": {"type": cls.type, "message": "something specific"}}


@pytest.mark.parametrize("junk", [None, {}, {"error": "x"}, {"error": {"type": "nope", "message": "m"}}, [1]])
def test_unknown_payload_is_internal(junk: object) -> None:
    error = from_payload(junk)
    assert isinstance(error, InternalError)
    assert error.message == "Internal server error"


def test_error_types_match_the_seeds() -> None:
    assert {
        "validation_error",
        "not_found",
        "insufficient_data",
        "storage_error",
        "internal_error",
    } <= ERROR_TYPES
    assert {"embedding_error", "git_error", "unavailable", "timeout"} <= ERROR_TYPES


def test_codec_is_json_and_keeps_exceptions_and_datetimes() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    raw = codec.dumps({"r": TimeoutError("slow"), "at": when, "s": {1}, "t": (1, 2)})
    assert raw.startswith(b"{")
    data = codec.loads(raw)
    assert data["r"] == {"__exception__": "TimeoutError", "message": "slow"}
    assert data["at"] == when.isoformat()
    assert data["s"] == [1] and data["t"] == [1, 2]


def test_codec_refuses_arbitrary_objects() -> None:
    with pytest.raises(TypeError):
        codec.dumps({"x": object()})
