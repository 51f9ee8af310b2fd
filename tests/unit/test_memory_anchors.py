"""Memories and values carry anchors where they are known: the files (and functions) a memory
names in the checkout it was stored from, the files a value's experiences share. Reading such a
file brings them up; when their code is rewritten they say so, when it is gone they leave
injection and stay searchable."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.server.capture.fix_hints import file_lessons
from learning_memory.shared.anchored_items import drop_items, mark_items, put_item
from learning_memory.shared.contracts.context import AssembleContextRequest
from learning_memory.shared.contracts.experiences import Anchor, PersistExperienceRequest
from learning_memory.shared.contracts.learning import (
    GetClusterMembersRequest,
    ListValuesRequest,
    StoreValueRequest,
)
from learning_memory.shared.contracts.memory import (
    DeleteMemoryRequest,
    MemoryRecord,
    RetrieveMemoriesRequest,
    StoreMemoryRequest,
)
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from learning_memory.shared.fix_store import connect
from learning_memory.worker.capture.text_anchors import anchors_in_text
from learning_memory.worker.jobs.context import assemble_context
from learning_memory.worker.jobs.experiences import persist_experience
from learning_memory.worker.jobs.item_staleness import recheck_item_anchors
from learning_memory.worker.jobs.learning import get_cluster_members, list_values, store_value
from learning_memory.worker.jobs.memory import delete_memory, retrieve_memories, store_memory
from learning_memory.worker.learning.value_anchors import shared_anchors
from learning_memory.worker.services import JobRun
from tests.helpers import job_run
from tests.learning_data import ghap_entry
from tests.unit.test_learning_jobs import SAMPLES, _typical_text

LOADER = """def load_partners(path):
    return read(path)


class Session:
    def refresh(self):
        return 1
"""
PROJECT = "repo-0123456789abcdef"
MEMORY = "Partner files are read by load_partners in src/app/loader.py; retries live in Session.refresh()."


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "loader.py").write_text(LOADER)
    (root / "README.md").write_text("# shop\n")
    (tmp_path / "outside.py").write_text("x = 1\n")
    return root


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path / "data", "hashing:384") as run:
        yield run


def test_only_files_of_the_worktree_and_their_named_units_anchor(worktree: Path) -> None:
    text = (
        f"{MEMORY} See README.md, ../outside.py, https://example.com/a/b.py, src/app/missing.py, "
        f"{worktree}/src/app/loader.py:12 and the word refresh alone."
    )
    anchors = anchors_in_text(text, worktree)
    assert anchors == [
        Anchor(file="src/app/loader.py", symbol="load_partners", digest=anchors[0].digest),
        Anchor(file="src/app/loader.py", symbol="Session.refresh", digest=anchors[1].digest),
        Anchor(file="README.md"),
    ]
    assert all(anchor.digest for anchor in anchors[:2])
    # A plain word that happens to be a method's name is not a mention of it.
    assert anchors_in_text("We refresh the cache in src/app/loader.py", worktree) == [
        Anchor(file="src/app/loader.py")
    ]
    assert anchors_in_text("Nothing here names a file.", worktree) == []


def _memory(content: str = MEMORY) -> MemoryRecord:
    return MemoryRecord(
        id=str(uuid.uuid4()),
        content=content,
        category="fact",
        importance=0.5,
        tags=[],
        created_at=datetime.now(UTC),
        project=PROJECT,
    )


async def test_a_memory_naming_a_file_is_brought_up_by_reading_it(run: JobRun, worktree: Path) -> None:
    memory = _memory()
    stored = await store_memory(run, StoreMemoryRequest(memory=memory, worktree=str(worktree)))
    assert [anchor.file for anchor in stored.anchors] == ["src/app/loader.py", "src/app/loader.py"]
    # A retried job finds the same anchors and writes the same rows.
    await store_memory(run, StoreMemoryRequest(memory=memory, worktree=str(worktree)))
    [hit] = (await retrieve_memories(run, RetrieveMemoriesRequest(query=MEMORY, limit=5))).results
    assert hit.anchors == stored.anchors and hit.project == PROJECT

    index = FixIndex(fix_index_path(run.services.settings.data_dir))
    shown = file_lessons(index, PROJECT, worktree, "src/app/loader.py")
    assert shown.items == [f"mem:{memory.id}"]
    assert "memory (about load_partners, Session.refresh): Partner files are read" in shown.text
    assert file_lessons(index, PROJECT, worktree, "README.md").items == []
    assert file_lessons(index, "repo-other", worktree, "src/app/loader.py").items == []

    assert (await delete_memory(run, DeleteMemoryRequest(id=memory.id))).deleted
    assert file_lessons(index, PROJECT, worktree, "src/app/loader.py").items == []
    index.close()


async def test_without_a_checkout_a_memory_has_no_anchors(run: JobRun) -> None:
    stored = await store_memory(run, StoreMemoryRequest(memory=_memory()))
    assert stored.anchors == []


async def test_rewritten_code_is_noted_and_gone_code_leaves_injection(run: JobRun, worktree: Path) -> None:
    memory = _memory()
    await store_memory(run, StoreMemoryRequest(memory=memory, worktree=str(worktree)))
    index = FixIndex(fix_index_path(run.services.settings.data_dir))
    context = AssembleContextRequest(query=MEMORY, budget_tokens=2_000, min_score=0.0)

    loader = worktree / "src" / "app" / "loader.py"
    loader.write_text(LOADER.replace("return read(path)", "return read(path, strict=True)"))
    changed = await recheck_item_anchors(run, PROJECT, str(worktree), ["src/app/loader.py"])
    assert changed == {f"mem:{memory.id}": "changed"}
    [item] = (await assemble_context(run, context)).items
    assert "(code changed since)" in item.text
    assert "(code changed since)" in file_lessons(index, PROJECT, worktree, "src/app/loader.py").text
    # Checked again with nothing new: nothing changes.
    assert await recheck_item_anchors(run, PROJECT, str(worktree), ["src/app/loader.py"]) == {}

    loader.unlink()
    assert await recheck_item_anchors(run, PROJECT, str(worktree), ["src/app/loader.py"]) == {
        f"mem:{memory.id}": "gone"
    }
    assert (await assemble_context(run, context)).items == []
    assert file_lessons(index, PROJECT, worktree, "src/app/loader.py").items == []
    [hit] = (await retrieve_memories(run, RetrieveMemoriesRequest(query=MEMORY, limit=5))).results
    assert (hit.id, hit.stale) == (memory.id, "gone")  # kept and searchable
    assert await recheck_item_anchors(run, PROJECT, str(worktree), []) == {}
    index.close()


def test_anchored_rows_are_replaced_marked_and_dropped(tmp_path: Path) -> None:
    path = tmp_path / "fixes.sqlite3"
    now = datetime.now(UTC)
    mark_items(path, {"mem:a": "gone"})  # no file yet: nothing to mark, nothing made
    drop_items(path, ["mem:a"])
    assert not path.exists()
    put_item(path, "p", "mem:a", [Anchor(file="./a.py"), Anchor(file="b.py", symbol="f")], "first", now)
    put_item(path, "p", "mem:a", [Anchor(file="a.py")], "again", now)
    index = FixIndex(path)
    assert [i.text for i in index.anchored_to("p", "a.py")] == ["again"]
    assert index.anchored_to("p", "b.py") == []
    mark_items(path, {"mem:a": "changed"})
    assert index.anchored_to("p", "a.py")[0].state == "changed"
    mark_items(path, {"mem:a": "gone"})
    assert index.anchored_to("p", "a.py") == []
    index.close()


def test_an_index_written_before_anchors_existed_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "fixes.sqlite3"
    with connect(path) as conn:
        conn.execute("CREATE TABLE fixes (id INTEGER)")
    assert FixIndex(path).anchored_to("p", "a.py") == []


def test_a_value_takes_the_files_its_members_share_in_one_repository() -> None:
    def member(project: str | None, *files: str) -> dict[str, object]:
        return {
            "project": project,
            "anchors": [{"file": f, "symbol": "run" if f == "a.py" else None} for f in files],
        }

    members = [member("p", "a.py", "b.py"), member("p", "a.py"), member("p", "c.py"), member("q", "a.py")]
    project, anchors = shared_anchors([*members, member(None, "a.py"), {"project": "p"}])
    assert (project, anchors) == ("p", [Anchor(file="a.py", symbol="run")])
    assert shared_anchors([member("p", "a.py")]) == (None, [])  # one experience's file is its own
    assert shared_anchors([]) == (None, [])


async def test_a_stored_value_is_anchored_where_its_cluster_worked(run: JobRun, tmp_path: Path) -> None:
    for number in range(len(SAMPLES)):
        entry = ghap_entry(SAMPLES[number], number)
        anchors = (
            [Anchor(file="src/etl/loader.py", symbol="load")]
            if number % 2
            else [Anchor(file=f"f{number}.py")]
        )
        await persist_experience(
            run,
            PersistExperienceRequest(entry=entry.model_copy(update={"anchors": anchors, "project": PROJECT})),
        )
    members = await get_cluster_members(run, GetClusterMembersRequest(axis="full", label=0, limit=1))
    assert members.members
    text = await _typical_text(run)
    record = await store_value(
        run,
        StoreValueRequest(
            id=str(uuid.uuid4()), text=text, axis="full", label=0, created_at=datetime.now(UTC)
        ),
    )
    assert record.project == PROJECT
    assert record.anchors == [Anchor(file="src/etl/loader.py", symbol="load")]
    [listed] = (await list_values(run, ListValuesRequest(axis="full"))).results
    assert listed.anchors == record.anchors and listed.stale is None
    index = FixIndex(fix_index_path(run.services.settings.data_dir))
    [found] = index.anchored_to(PROJECT, "src/etl/loader.py")
    assert found.item == f"val:{record.id}" and found.symbols == ("load",)

    # A session deletes the file its cluster worked in: the value is kept, listed as gone, and
    # neither a file read nor the prompt hook brings it any more.
    checkout = tmp_path / "checkout"
    (checkout / "src" / "etl").mkdir(parents=True)
    changed = await recheck_item_anchors(run, PROJECT, str(checkout), ["src/etl/loader.py"])
    assert changed == {f"val:{record.id}": "gone"}
    [listed] = (await list_values(run, ListValuesRequest(axis="full"))).results
    assert listed.stale == "gone"
    assert index.anchored_to(PROJECT, "src/etl/loader.py") == []
    context = AssembleContextRequest(query=text, budget_tokens=2_000, min_score=0.0)
    assert [i for i in (await assemble_context(run, context)).items if i.kind == "value"] == []
    index.close()
