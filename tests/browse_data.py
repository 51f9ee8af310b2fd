"""A populated store for the browsing jobs' tests: sample experiences in two projects from both
sources, memories, a session log with what the hooks showed, and the feedback of a mined one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from learning_memory.cli.samples import SampleEntry
from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.contracts.experiences import GhapEntry, PersistExperienceRequest
from learning_memory.shared.contracts.memory import MemoryRecord, StoreMemoryRequest
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from learning_memory.shared.fix_writes import FeedbackRecord
from learning_memory.shared.paths import capture_dir
from learning_memory.worker.jobs.experiences import persist_experience
from learning_memory.worker.jobs.memory import store_memory
from learning_memory.worker.services import JobRun
from tests.learning_data import T0, ghap_entry

PROJECTS = ("repo-a", "repo-b")
NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def entry(samples: list[SampleEntry], number: int) -> GhapEntry:
    """Sample ``number``: project repo-a for even numbers, repo-b for odd; every fifth mined (auto)."""
    return ghap_entry(samples[number % len(samples)], number).model_copy(
        update={"project": PROJECTS[number % 2], "source": "auto" if number % 5 == 0 else "agent"}
    )


async def persist(run: JobRun, samples: list[SampleEntry], numbers: range) -> list[GhapEntry]:
    entries = [entry(samples, number) for number in numbers]
    for one in entries:
        await persist_experience(run, PersistExperienceRequest(entry=one))
    return entries


def memory(content: str, project: str | None = "repo-a", minutes: int = 0) -> MemoryRecord:
    return MemoryRecord(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, content)),
        content=content,
        category="fact",
        importance=0.5,
        tags=[],
        created_at=T0 + timedelta(minutes=minutes),
        project=project,
    )


async def remember(run: JobRun, *contents: str, project: str | None = "repo-a") -> list[MemoryRecord]:
    stored = [memory(text, project, minutes) for minutes, text in enumerate(contents)]
    for one in stored:
        await store_memory(run, StoreMemoryRequest(memory=one))
    return stored


def write_log(data_dir: Path, project: str, session: str, events: list[dict[str, object]]) -> Path:
    """A session log as the hooks write it: ``events`` are SessionEvent fields past the common ones."""
    path = capture_dir(data_dir) / project / "sessions" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, fields in enumerate(events, start=1):
        event = SessionEvent(
            id=f"{session}-e{n}",
            session_id=session,
            at=NOW + timedelta(seconds=n),
            project=project,
            worktree="/work/app",
            **fields,
        )
        lines.append(event.model_dump_json())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def record_feedback(data_dir: Path, project: str, session: str, outcomes: dict[str, bool]) -> None:
    """A mined session's feedback: each item shown, and whether its episode went green."""
    index = FixIndex(fix_index_path(data_dir))
    records = [
        FeedbackRecord(item=item, episode_id=f"{session}-ep", via="prompt", helped=helped, shown_at=NOW)
        for item, helped in outcomes.items()
    ]
    index.record_session(project, session, "/work/app", [], [], records)
    index.close()
