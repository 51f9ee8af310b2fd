"""The audit's and the overview's answers kept while the store stays as it was."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.shared.contracts.memory import MemoryRecord, StoreMemoryRequest
from learning_memory.worker.browse import memo
from learning_memory.worker.curation.log import log_path
from learning_memory.worker.jobs.memory import store_memory
from tests.helpers import job_run


async def test_kept_until_the_store_or_the_clock_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed: list[int] = []

    async def compute() -> int:
        computed.append(1)
        return len(computed)

    async with job_run(tmp_path) as run:
        assert await memo.kept(run, "t", "asked", compute) == 1
        assert await memo.kept(run, "t", "asked", compute) == 1  # kept
        assert await memo.kept(run, "t", "other", compute) == 2  # another question
        memory = MemoryRecord(
            id=str(uuid.uuid4()),
            content="uv, not pip",
            category="preference",
            importance=0.5,
            tags=[],
            created_at=datetime.now(UTC),
        )
        await store_memory(run, StoreMemoryRequest(memory=memory))
        assert await memo.kept(run, "t", "other", compute) == 3  # a record more
        assert await memo.kept(run, "t", "other", compute) == 3
        log_path(tmp_path / "data").parent.mkdir(parents=True, exist_ok=True)
        log_path(run.services.settings.data_dir).write_bytes(b"")  # a person's change
        assert await memo.kept(run, "t", "other", compute) == 4
        later = time.monotonic() + memo.MAX_AGE_S + 1
        monkeypatch.setattr(time, "monotonic", lambda: later)
        assert await memo.kept(run, "t", "other", compute) == 5  # a minute on
