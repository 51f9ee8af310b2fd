"""The bundled sample experiences as resolved GHAP entries, for persisting straight through the job."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from learning_memory.cli.samples import SampleEntry
from learning_memory.shared.contracts.experiences import GhapEntry

T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)


def ghap_entry(sample: SampleEntry, number: int, *, orphaned: bool = False) -> GhapEntry:
    """A resolved entry with a deterministic id (``number``), as the journal would hand it over."""
    entry_id = f"ghap_{uuid.uuid5(uuid.NAMESPACE_URL, f'sample-{number}').hex[:12]}"
    return sample.resolved_entry(entry_id, "sample", T0 + timedelta(minutes=number), orphaned=orphaned)
