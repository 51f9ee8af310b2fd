"""The store's write-ahead log and payload indexes are handed back to the page cache: after a load
and as writes go."""

from __future__ import annotations

import ctypes
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from learning_memory.worker.vectors import edge, mapped_pages
from learning_memory.worker.vectors.base import CollectionSpec, PointData
from learning_memory.worker.vectors.edge import EdgeVectorStore

MAPS = """\
7f00000000-7f00001000 rw-s 00000000 fe:00 1 /data/vectors/memories/wal/open-1
7f00001000-7f00003000 rw-s 00000000 fe:00 2 /data/vectors/memories/wal/closed-0
7f00003000-7f00004000 rw-p 00000000 fe:00 3 /data/vectors/memories/wal/open-2
7f00004000-7f00005000 rw-s 00000000 fe:00 4 /data/vectors/memories/wal2/open-1
7f00005000-7f00006000 rw-p 00000000 00:00 0
7f00006000-7f00007000 rw-s 00000000 fe:00 5 /data/vectors/memories/segments/s1/payload_index/x-map/page_0.dat
7f00007000-7f00008000 rw-s 00000000 fe:00 6 /data/vectors/memories/segments/s1/vector_storage/chunk_0.mmap
7f00008000-7f00009000 rw-s 00000000 fe:00 7 /data/vectors/memories/payload_index.json
"""
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and madvise")


def test_only_shared_mappings_of_files_in_the_folder_are_chosen() -> None:
    found = mapped_pages.shared_mappings(Path("/data/vectors/memories/wal"), MAPS)
    assert found == [(0x7F00000000, 0x7F00001000), (0x7F00001000, 0x7F00003000)]


def test_within_chooses_files_inside_folders_of_those_names() -> None:
    found = mapped_pages.shared_mappings(Path("/data/vectors/memories"), MAPS, edge.HANDED_BACK)
    # The log's files and the payload index's pages; not the vectors, nor a file named like one.
    assert found == [(0x7F00000000, 0x7F00001000), (0x7F00001000, 0x7F00003000), (0x7F00006000, 0x7F00007000)]


def _resident_kib(folder: Path) -> tuple[int, int]:
    """(mapped, resident) KiB of this process's mappings of files under ``folder``."""
    mapped = resident = 0
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):
            inside = len(fields) == 6 and fields[5].startswith(f"{folder}/")
        elif inside and fields[0] == "Size:":
            mapped += int(fields[1])
        elif inside and fields[0] == "Rss:":
            resident += int(fields[1])
    return mapped, resident


def _points(count: int) -> list[PointData]:
    rows = np.random.default_rng(7).standard_normal((count, 16)).astype(np.float32)
    return [PointData(str(uuid.uuid4()), rows[i], {"text": "x" * 200, "i": i}) for i in range(count)]


def _payload_index_kib(folder: Path) -> int:
    """Resident KiB of this process's mappings of the payload indexes under ``folder``."""
    segments = folder / "memories" / "segments"
    return sum(_resident_kib(index.resolve())[1] for index in segments.glob("*/payload_index"))


async def _load_and_measure(folder: Path) -> tuple[int, int]:
    store = await EdgeVectorStore.open(folder)
    try:
        mapped, resident = _resident_kib((folder / "memories" / edge.WAL).resolve())
        assert mapped > 4_096  # the log is mapped (and read in full to load)
        assert await store.count("memories") == 3_000  # nothing was lost
        return resident, _payload_index_kib(folder)
    finally:
        await store.close()


@linux_only
async def test_a_loaded_store_keeps_little_of_its_log_resident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await EdgeVectorStore.open(tmp_path)
    await store.ensure_collection(CollectionSpec("memories", 16, indexes={"i": "integer"}))
    await store.upsert("memories", _points(3_000))
    await store.close()

    monkeypatch.setattr(mapped_pages._State, "supported", False)
    kept, index_kept = await _load_and_measure(tmp_path)
    monkeypatch.setattr(mapped_pages._State, "supported", True)
    handed_back, index_handed_back = await _load_and_measure(tmp_path)
    assert kept > 512  # KiB: what the load read stays resident...
    assert handed_back < kept // 4  # ...unless it is handed back
    assert index_kept > 64 and index_handed_back < index_kept // 4  # the payload index pages too


@linux_only
async def test_writes_page_the_log_out_every_so_many_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Path] = []

    def page_out(folder: Path, within: object = None) -> int:
        asked.append(folder)
        assert within == edge.HANDED_BACK
        return 0

    monkeypatch.setattr(mapped_pages, "page_out", page_out)
    store = await EdgeVectorStore.open(tmp_path)
    try:
        await store.ensure_collection(CollectionSpec("memories", 16))
        points = _points(edge.PAGE_OUT_EVERY + 10)
        await store.upsert("memories", points[:10])
        assert asked == []
        await store.upsert("memories", points[10:])
        await store.delete("memories", [p.id for p in points[: edge.PAGE_OUT_EVERY]])
        assert asked == [tmp_path / "memories"] * 2
    finally:
        await store.close()


def test_without_support_nothing_is_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(mapped_pages._State, "supported", False)
    assert mapped_pages.page_out(tmp_path) == 0


@linux_only
def test_an_old_kernel_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "wal"
    target.mkdir()
    (target / "open-1").write_bytes(b"\0" * 4096)
    maps = f"7f00000000-7f00001000 rw-s 00000000 fe:00 1 {target.resolve()}/open-1\n" * 2
    monkeypatch.setattr(mapped_pages, "_MAPS", tmp_path / "maps")
    (tmp_path / "maps").write_text(maps)
    monkeypatch.setattr(mapped_pages, "_madvise", lambda: lambda *args: -1)
    monkeypatch.setattr(ctypes, "get_errno", lambda: 22)
    monkeypatch.setattr(mapped_pages._State, "supported", True)
    assert mapped_pages.page_out(target) == 0
    assert mapped_pages._State.supported is False


@linux_only
def test_a_range_gone_meanwhile_is_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "wal"
    target.mkdir()
    maps = (
        f"7f00000000-7f00001000 rw-s 00000000 fe:00 1 {target.resolve()}/closed-0\n"
        f"7f00001000-7f00003000 rw-s 00000000 fe:00 1 {target.resolve()}/open-1\n"
    )
    (tmp_path / "maps").write_text(maps)
    monkeypatch.setattr(mapped_pages, "_MAPS", tmp_path / "maps")
    answers = iter([-1, 0])
    monkeypatch.setattr(mapped_pages, "_madvise", lambda: lambda *args: next(answers))
    monkeypatch.setattr(ctypes, "get_errno", lambda: 12)
    monkeypatch.setattr(mapped_pages._State, "supported", True)
    assert mapped_pages.page_out(target) == 0x2000


def test_no_proc_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(mapped_pages, "_MAPS", tmp_path / "missing")
    monkeypatch.setattr(mapped_pages._State, "supported", True)
    assert mapped_pages.page_out(tmp_path) == 0
    assert mapped_pages._State.supported is False
