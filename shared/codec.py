"""JSON for everything that crosses Redis: a writable Redis must never mean code execution
(arq's default, pickle, would)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any


def _default(value: Any) -> Any:
    if isinstance(value, BaseException):
        # arq stores a failed job's exception as its result; keep its kind and text.
        return {"__exception__": type(value).__name__, "message": str(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=_default, separators=(",", ":")).encode()


def loads(raw: bytes | str) -> Any:
    return json.loads(raw)
