"""Query and form values read strictly: a bad one is a validation error the page shows, never a
traceback and never a silent default."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, get_args

from learning_memory.shared.errors import ValidationError


def text(values: Mapping[str, Any], name: str, limit: int = 2000) -> str | None:
    value = values.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be text")
    value = value.strip()
    if len(value) > limit:
        raise ValidationError(f"{name} is longer than {limit:,} characters")
    return value or None


def number(values: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    raw = text(values, name, 20)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{name} must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low} and {high}, not {value}")
    return value


def fraction(values: Mapping[str, Any], name: str) -> float:
    raw = text(values, name, 20)
    if raw is None:
        raise ValidationError(f"{name} is required")
    try:
        value = float(raw)
    except ValueError:
        raise ValidationError(f"{name} must be a number from 0 to 1, not {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"{name} must be from 0 to 1, not {value}")
    return value


def choice(values: Mapping[str, Any], name: str, literal: Any) -> Any:
    """One of a ``Literal``'s values, or None when absent."""
    raw = text(values, name, 100)
    allowed = get_args(literal)
    if raw is None:
        return None
    if raw not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}, not {raw!r}")
    return raw


def day(values: Mapping[str, Any], name: str) -> datetime | None:
    raw = text(values, name, 40)
    if raw is None:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError(f"{name} must be a date like 2026-03-14, not {raw!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def required(values: Mapping[str, Any], name: str, limit: int = 2000) -> str:
    value = text(values, name, limit)
    if value is None:
        raise ValidationError(f"{name} is required")
    return value
