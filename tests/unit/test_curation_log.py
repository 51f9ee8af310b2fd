"""The curation log on its own: a change recorded once per id, its states, the history newest first,
the later changes that stand in an undo's way, and its schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from learning_memory.shared.errors import StorageError
from learning_memory.worker.curation.log import MIGRATIONS, CurationLog, NewChange, log_path


def change(change_id: str, *targets: str, kind: str = "update_memory") -> NewChange:
    item_kind = {"mem": "memory", "val": "value", "exp": "experience"}[targets[0][:3]]
    return NewChange(
        id=change_id,
        kind=kind,  # type: ignore[arg-type]
        item_kind=item_kind,  # type: ignore[arg-type]
        targets=list(targets),
        summary=f"change {change_id}",
        diff={"importance": [0.5, 0.9]},
        request={"id": targets[0]},
        before=[{"collection": "memories", "id": targets[0], "payload": {"content": "x"}, "vector": None}],
    )


@pytest.fixture
def history(tmp_path: Path) -> CurationLog:
    return CurationLog(log_path(tmp_path / "data"))


async def test_a_change_is_recorded_once_pending_then_applied_then_undone(history: CurationLog) -> None:
    first = await history.add(change("c1", "mem:a"))
    assert first.record.state == "pending" and first.record.undone_at is None
    assert first.before[0]["payload"] == {"content": "x"} and first.request == {"id": "mem:a"}
    # The same id again (a retried job): what was recorded, not a second entry.
    again = await history.add(change("c1", "mem:b"))
    assert again.record == first.record and again.seq == first.seq
    applied = await history.set_state("c1", "applied")
    assert applied.record.state == "applied" and applied.record.diff == {"importance": [0.5, 0.9]}
    undone = await history.set_state("c1", "undone")
    assert undone.record.state == "undone" and undone.record.undone_at is not None
    assert await history.get("missing") is None
    with pytest.raises(StorageError, match="not in the log"):
        await history.set_state("missing", "applied")


async def test_history_is_newest_first_and_filtered_by_kind_and_record(history: CurationLog) -> None:
    await history.add(change("c1", "mem:a"))
    await history.add(change("c2", "val:v", kind="retire_value"))
    await history.add(change("c3", "mem:b", "mem:a", kind="merge_memories"))
    records, total = await history.listing(limit=10, offset=0)
    assert [r.id for r in records] == ["c3", "c2", "c1"] and total == 3
    assert records[0].targets == ["mem:b", "mem:a"]  # the kept one first
    records, total = await history.listing(limit=1, offset=1)
    assert [r.id for r in records] == ["c2"] and total == 3
    records, total = await history.listing(limit=10, offset=0, item_kind="memory")
    assert [r.id for r in records] == ["c3", "c1"] and total == 2
    records, total = await history.listing(limit=10, offset=0, targets=["mem:a"])
    assert [r.id for r in records] == ["c3", "c1"]


async def test_later_changes_to_the_same_records_stand_in_an_undos_way(history: CurationLog) -> None:
    first = await history.add(change("c1", "mem:a"))
    await history.add(change("c2", "mem:other"))
    assert await history.later_in_force(first) == []
    await history.add(change("c3", "mem:b", "mem:a", kind="merge_memories"))
    await history.add(change("c4", "mem:a"))
    assert await history.later_in_force(first) == ["c4", "c3"]
    await history.set_state("c4", "undone")
    assert await history.later_in_force(first) == ["c3"]


async def test_the_schema_is_versioned_and_a_newer_one_refused(history: CurationLog) -> None:
    await history.add(change("c1", "mem:a"))
    with sqlite3.connect(history.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    reopened = CurationLog(history.path)
    assert (await reopened.get("c1")) is not None
    with sqlite3.connect(history.path) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(StorageError, match="newer than this code knows"):
        await reopened.get("c1")


async def test_an_unreadable_log_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "curation.sqlite3"
    path.write_bytes(b"not a database at all, and long enough to be read as one" * 20)
    with pytest.raises(StorageError, match="Curation log"):
        await CurationLog(path).get("c1")
