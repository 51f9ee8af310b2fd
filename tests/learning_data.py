"""The bundled sample experiences as resolved GHAP entries, for persisting straight through the job."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from server.cli.samples import SampleEntry
from shared.contracts.experiences import GhapEntry, Lesson, Resolution, RootCause, confidence_tier

T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)


def ghap_entry(sample: SampleEntry, number: int, *, orphaned: bool = False) -> GhapEntry:
    """A resolved entry with a deterministic id (``number``), as the journal would hand it over."""
    created = T0 + timedelta(minutes=number)
    answer = sample.resolve
    lesson = Lesson(**answer["lesson"]) if "lesson" in answer else None
    cause = RootCause(**answer["root_cause"]) if "root_cause" in answer else None
    resolution = Resolution(
        status=answer["status"],
        result=answer["result"],
        surprise=answer.get("surprise"),
        root_cause=cause,
        lesson=lesson,
        confidence_tier=confidence_tier(answer["status"], lesson, orphaned),
        resolved_at=created + timedelta(minutes=20),
        resolved_in_session="sample",
    )
    return GhapEntry(
        id=f"ghap_{uuid.uuid5(uuid.NAMESPACE_URL, f'sample-{number}').hex[:12]}",
        session_id="sample",
        created_at=created,
        updated_at=created,
        resolution=resolution,
        **sample.start,
    )
