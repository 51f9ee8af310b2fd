"""Reading a session log: one :class:`SessionEvent` a line, appended by the hooks as the session goes.

A hook delivered twice writes its event twice (same ``id``): it is read once, where it first
appears. The last line may be torn (the log is read while a hook appends to it): a line that does
not parse is skipped, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable

import pydantic

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.log import get_logger

log = get_logger(__name__)


def parse_events(lines: Iterable[str]) -> list[SessionEvent]:
    """The log's events in the order they were written, each once."""
    events: list[SessionEvent] = []
    seen: set[str] = set()
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            event = SessionEvent.model_validate_json(line)
        except pydantic.ValidationError:
            skipped += 1
            continue
        if event.id in seen:
            continue
        seen.add(event.id)
        events.append(event)
    if skipped:
        log.info("capture.lines_skipped", skipped=skipped, read=len(events))
    return events
