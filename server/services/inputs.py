"""Input repair shared by the tools that forgive what they can (memory, code)."""

from __future__ import annotations

import math

from learning_memory.shared.log import get_logger

log = get_logger(__name__)


def utf8_safe(text: str) -> str:
    """JSON may carry lone surrogates ("\\ud800"), which UTF-8 cannot: stores and the wire would fail."""
    return text.encode("utf-8", "replace").decode("utf-8")


def clamp(name: str, value: float, low: float, high: float, tool: str) -> float:
    """``value`` within [low, high], logging a warning when it had to move."""
    # An int beyond float range compares fine but cannot go through math.isnan.
    if isinstance(value, float) and math.isnan(value):
        clamped = (low + high) / 2
    else:
        clamped = min(high, max(low, value))
    if clamped != value:
        log.warning("tool.argument_clamped", tool=tool, argument=name, given=value, used=clamped)
    return clamped
