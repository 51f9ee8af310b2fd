"""The words each kind of record is found by on the keyword side, from its payload.

Built from the payload, not from the text the dense side embedded, so the rows of a collection
written before the keyword side existed are rebuilt the same way from what the store holds.
"""

from __future__ import annotations

from typing import Any

from learning_memory.shared.contracts.experiences import collection_for
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES

AXIS_FIELDS: dict[str, tuple[str, ...]] = {
    "full": (
        "goal",
        "hypothesis",
        "action",
        "prediction",
        "outcome_result",
        "surprise",
        "root_cause",
        "lesson",
    ),
    "strategy": ("strategy", "action", "lesson"),
    "surprise": ("surprise", "outcome_result"),
    "root_cause": ("root_cause",),
}
COLLECTIONS: frozenset[str] = frozenset(
    {MEMORIES, VALUES_COLLECTION, *(collection_for(axis) for axis in AXIS_FIELDS)}
)


def _flat(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.replace("-", " ")] if value.strip() else []
    if isinstance(value, dict):
        return [text for item in value.values() for text in _flat(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _flat(item)]
    return []


def keyword_text(collection: str, payload: dict[str, Any]) -> str:
    """The text a record of ``collection`` is indexed by ("" for a collection without keywords)."""
    if collection == MEMORIES:
        parts = _flat(payload.get("content")) + _flat(payload.get("tags"))
    elif collection == VALUES_COLLECTION:
        parts = _flat(payload.get("text"))
    else:
        axis = collection.removeprefix("experiences_")
        parts = [text for key in AXIS_FIELDS.get(axis, ()) for text in _flat(payload.get(key))]
    return "\n".join(parts)
