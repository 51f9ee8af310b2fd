"""The loop state on disk: restart persistence, retention, serialized decisions across threads
and processes, atomic writes, and unreadable or unusable state."""

from __future__ import annotations

import multiprocessing
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from learning_memory.server.loops.store import RETAINED_LOOPS, Busy, LoopStore
from learning_memory.shared.errors import NotFoundError, StorageError, ValidationError
from learning_memory.shared.loop_settings import load_loop_settings

LIMITS = load_loop_settings(plan_threshold=90, plan_max_iterations=20)


def _store(root: Path) -> LoopStore:
    return LoopStore(root, LIMITS)


def test_a_new_store_on_the_folder_finds_every_loop_as_decided(tmp_path: Path) -> None:
    first = _store(tmp_path)
    loop = first.create("plan")
    assert re.fullmatch(r"[0-9a-f]{8}", loop.id)
    assert (loop.status, loop.threshold, loop.max_iterations, loop.iteration) == ("initialized", 90, 20, 0)
    first.decide(loop.id, 40)
    first.decide(loop.id, 60)
    first.close()

    again = _store(tmp_path)  # a restarted server
    kept = again.get(loop.id)
    assert kept.status == "refine" and kept.score_history == [40, 60] and kept.iteration == 2
    assert kept.created_at == loop.created_at
    assert again.decide(loop.id, 95).status == "completed"
    assert _store(tmp_path).get(loop.id.upper()).status == "completed"  # ids are case-blind


def test_limits_are_fixed_when_a_loop_starts(tmp_path: Path) -> None:
    loop = _store(tmp_path).create("plan")
    later = LoopStore(tmp_path, load_loop_settings(plan_threshold=50))
    assert later.decide(loop.id, 60).status == "refine"  # still 90, as when it started
    assert later.create("plan").threshold == 50


def test_only_the_most_recent_loops_are_kept_oldest_dropped_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids = [store.create("spec").id for _ in range(RETAINED_LOOPS + 3)]
    assert [loop.id for loop in store.newest_first()] == ids[::-1][:RETAINED_LOOPS]
    for dropped in ids[:3]:
        with pytest.raises(NotFoundError, match="list_active_loops"):
            store.get(dropped)
    assert _store(tmp_path).newest_first()[-1].id == ids[3]


def test_unknown_loop_is_not_found(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for missing in ("deadbeef", "", "../../etc"):
        with pytest.raises(NotFoundError):
            store.get(missing)
        with pytest.raises(NotFoundError):
            store.decide(missing, 50)


def _one_decision(store: LoopStore, loop_id: str, score: int) -> str:
    try:
        return store.decide(loop_id, score).status
    except ValidationError:
        return "refused"


# Four deciders on one loop with scores of 10 (threshold 90): in any order, serialized
# decisions give refine, refine, user_input (stagnant) and one refusal; a lost update would not.
EXPECTED = Counter({"refine": 2, "user_input": 1, "refused": 1})


def test_concurrent_decisions_on_one_loop_are_serialized_across_threads(tmp_path: Path) -> None:
    store = _store(tmp_path)
    loop_ids = [store.create("plan").id for _ in range(RETAINED_LOOPS)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            loop_id: [pool.submit(_one_decision, store, loop_id, 10) for _ in range(4)]
            for loop_id in loop_ids
        }
        outcomes = {loop_id: Counter(f.result(60) for f in fs) for loop_id, fs in futures.items()}
    assert all(counts == EXPECTED for counts in outcomes.values()), outcomes
    assert all(store.get(loop_id).score_history == [10, 10, 10] for loop_id in loop_ids)


def _decide_in_process(root: str, loop_ids: list[str], barrier: Barrier, results: object) -> None:
    store = LoopStore(Path(root), LIMITS)
    barrier.wait(60)
    for loop_id in loop_ids:
        results.put((loop_id, _one_decision(store, loop_id, 10)))  # type: ignore[attr-defined]


def test_concurrent_decisions_are_serialized_across_processes(tmp_path: Path) -> None:
    store = _store(tmp_path)
    loop_ids = [store.create("plan").id for _ in range(RETAINED_LOOPS)]
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(4), spawn.Queue()
    procs = [
        spawn.Process(target=_decide_in_process, args=(str(tmp_path), loop_ids, barrier, results))
        for _ in range(4)
    ]
    for proc in procs:
        proc.start()
    outcomes: dict[str, Counter[str]] = {loop_id: Counter() for loop_id in loop_ids}
    for _ in range(4 * len(loop_ids)):
        loop_id, status = results.get(timeout=120)
        outcomes[loop_id][status] += 1
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert all(counts == EXPECTED for counts in outcomes.values()), outcomes
    assert all(store.get(loop_id).score_history == [10, 10, 10] for loop_id in loop_ids)


def test_an_unreadable_state_file_is_set_aside_and_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("plan")
    (tmp_path / "loops.json").write_text("{not json")
    with pytest.raises(StorageError, match="moved to") as caught:
        store.newest_first()
    assert "corrupt" in caught.value.message
    assert [p.read_text() for p in (tmp_path / "corrupt").iterdir()] == ["{not json"]
    assert store.newest_first() == []
    assert store.create("spec").status == "initialized"


def test_a_crashed_writers_temp_file_is_swept_and_the_state_intact(tmp_path: Path) -> None:
    loop = _store(tmp_path).create("build_code")
    leftover = tmp_path / ".loops.json.0123abcd.tmp"
    leftover.write_text('{"loops": [')
    store = _store(tmp_path)
    assert store.get(loop.id).threshold == 95
    assert not leftover.exists()


def test_an_unusable_folder_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(StorageError, match="Cannot open the loop state folder"):
        _store(blocker)


def test_a_failed_write_is_a_storage_error_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    loop = store.create("plan")

    def disk_full(path: Path, data: bytes, *, durable: bool = True) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("learning_memory.server.journal.files.atomic_write", disk_full)
    with pytest.raises(StorageError, match="No space left"):
        store.decide(loop.id, 50)
    monkeypatch.undo()
    assert store.get(loop.id).score_history == []


def test_without_wait_a_held_state_is_busy_and_with_wait_it_is_served(tmp_path: Path) -> None:
    store, other = _store(tmp_path), _store(tmp_path)  # two open files: as two processes
    loop = store.create("plan")
    with ThreadPoolExecutor(max_workers=1) as pool:
        with other._locked(wait=True):
            with pytest.raises(Busy):
                store.get(loop.id, wait=False)
            waiting = pool.submit(store.decide, loop.id, 30)
            # It cannot finish while the other holds the lock; this thread's own call is busy too.
            with pytest.raises(Busy):
                store.newest_first(wait=False)
            assert not waiting.done()
    assert waiting.result(60).status == "refine"
    assert store.get(loop.id, wait=False).score_history == [30]


async def test_tools_work_on_the_event_loop_or_in_a_thread_when_busy() -> None:
    from learning_memory.server.tools.loops import _run

    calls: list[bool] = []

    def method(value: int, *, wait: bool = True) -> int:
        calls.append(wait)
        if not wait:
            raise Busy
        return value * 2

    assert await _run(method, 21) == 42
    assert calls == [False, True]
