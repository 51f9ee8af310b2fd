"""The GHAP journal: entries, history, tiers, the archive and outbox, crash repair, corrupt
files, and several processes sharing one journal."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from learning_memory.server.journal.journal import ABANDONED_RESULT, Journal
from learning_memory.shared.contracts.experiences import GhapEntry, Lesson, RootCause
from learning_memory.shared.errors import NotFoundError, StorageError, ValidationError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "journal"


@pytest.fixture
def journal(root: Path) -> Iterator[Journal]:
    j = Journal(root, "session-a")
    yield j
    j.close()


def start(j: Journal, goal: str = "fix the flaky test", domain: str = "debugging") -> GhapEntry:
    entry, _ = j.start(
        domain=domain,  # type: ignore[arg-type]
        strategy="read-the-error",
        goal=goal,
        hypothesis="h0",
        action="a0",
        prediction="p0",
    )
    return entry


def log_events(root: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (root / "session_log.jsonl").read_text().splitlines()]


def all_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# --- start / active / update -------------------------------------------------------


def test_start_and_active(journal: Journal, root: Path) -> None:
    assert journal.active() is None
    entry, displaced = journal.start(
        domain="feature", strategy="research-first", goal="g", hypothesis="h", action="a", prediction="p"
    )
    assert displaced is None
    assert entry.session_id == "session-a"
    assert entry.resolution is None and entry.iteration_count == 1
    assert entry.created_at.tzinfo is not None
    assert journal.active() == entry
    assert GhapEntry.model_validate_json((root / "active.json").read_bytes()) == entry
    assert [(e["event"], e["ghap_id"], e["session"]) for e in log_events(root)] == [
        ("start", entry.id, "session-a")
    ]


def test_update_keeps_history(journal: Journal) -> None:
    entry = start(journal)
    first = journal.update(hypothesis="h1", note="the error said so")
    assert first.iteration_count == 2
    assert (first.hypothesis, first.action, first.prediction) == ("h1", "a0", "p0")
    (it,) = first.iterations
    assert (it.hypothesis, it.action, it.prediction, it.strategy, it.note) == (
        "h0",
        "a0",
        "p0",
        "read-the-error",
        "the error said so",
    )
    second = journal.update(action="a2", prediction="p2", strategy="divide-and-conquer")
    assert second.iteration_count == 3
    assert second.iterations[1].hypothesis == "h1" and second.iterations[1].note is None
    assert second.iterations[1].strategy == "read-the-error"
    assert second.strategy == "divide-and-conquer" and second.updated_at >= entry.updated_at
    assert journal.active() == second
    assert second.id == entry.id and second.created_at == entry.created_at


def test_update_and_resolve_without_active_entry(journal: Journal) -> None:
    with pytest.raises(NotFoundError, match="start_ghap"):
        journal.update(note="x")
    with pytest.raises(NotFoundError, match="start_ghap"):
        journal.resolve(status="confirmed", result="r")
    start(journal)
    journal.resolve(status="confirmed", result="r")
    with pytest.raises(NotFoundError):
        journal.resolve(status="confirmed", result="r")


# --- resolve -----------------------------------------------------------------------


def test_resolve_gold_with_lesson(journal: Journal, root: Path) -> None:
    entry = start(journal)
    resolved = journal.resolve(
        status="confirmed",
        result="it worked",
        surprise="none",
        root_cause=RootCause(category="oversight", description="forgot the await"),
        lesson=Lesson(what_worked="reading the traceback"),
    )
    assert resolved.id == entry.id
    assert resolved.resolution is not None
    assert resolved.resolution.confidence_tier == "gold"
    assert resolved.resolution.resolved_in_session == "session-a"
    assert resolved.resolution.root_cause is not None
    assert journal.active() is None
    assert not (root / "active.json").exists()
    assert GhapEntry.model_validate_json((root / "archive" / f"{entry.id}.json").read_bytes()) == resolved
    assert (root / "outbox" / entry.id).exists()
    assert [e["event"] for e in log_events(root)] == ["start", "resolve"]


def test_resolve_silver_without_lesson(journal: Journal) -> None:
    start(journal)
    resolved = journal.resolve(status="falsified", result="it did not")
    assert resolved.resolution is not None and resolved.resolution.confidence_tier == "silver"


def test_resolve_orphaned_entry_is_bronze(journal: Journal, root: Path) -> None:
    entry = start(journal)
    other = Journal(root, "session-b")
    try:
        assert other.active() == entry
        resolved = other.resolve(status="confirmed", result="r", lesson=Lesson(what_worked="w"))
    finally:
        other.close()
    assert resolved.resolution is not None
    assert resolved.resolution.confidence_tier == "bronze"
    assert resolved.resolution.resolved_in_session == "session-b"
    assert resolved.session_id == "session-a"


def test_resolve_abandoned(journal: Journal) -> None:
    start(journal)
    resolved = journal.resolve(status="abandoned", result="gave up", lesson=Lesson(what_worked="w"))
    assert resolved.resolution is not None and resolved.resolution.confidence_tier == "abandoned"


def test_start_with_active_entry_archives_it_as_abandoned(journal: Journal, root: Path) -> None:
    old = start(journal, goal="old")
    other = Journal(root, "session-b")
    try:
        new, displaced = other.start(
            domain="testing",
            strategy="trial-and-error",
            goal="new",
            hypothesis="h",
            action="a",
            prediction="p",
        )
    finally:
        other.close()
    assert displaced is not None and displaced.id == old.id
    assert displaced.resolution is not None
    assert displaced.resolution.status == "abandoned"
    assert displaced.resolution.confidence_tier == "abandoned"
    assert displaced.resolution.result == ABANDONED_RESULT
    assert displaced.resolution.resolved_in_session == "session-b"
    assert (root / "archive" / f"{old.id}.json").exists()
    assert (root / "outbox" / old.id).exists()
    assert journal.active() == new
    assert [e.id for e in journal.outbox()] == [old.id]
    assert [e["event"] for e in log_events(root)] == ["start", "orphaned", "start"]


# --- entries / outbox --------------------------------------------------------------


def test_entries_order_filters_and_limit(journal: Journal) -> None:
    a = start(journal, goal="a", domain="debugging")
    journal.resolve(status="confirmed", result="r")
    b = start(journal, goal="b", domain="testing")
    journal.resolve(status="falsified", result="r")
    c = start(journal, goal="c", domain="debugging")
    journal.resolve(status="falsified", result="r")
    d = start(journal, goal="d", domain="debugging")  # stays active

    assert [e.id for e in journal.entries(limit=10)] == [d.id, c.id, b.id, a.id]
    assert [e.id for e in journal.entries(limit=2)] == [d.id, c.id]
    assert journal.entries(limit=0) == []
    assert [e.id for e in journal.entries(limit=10, domain="debugging")] == [d.id, c.id, a.id]
    assert [e.id for e in journal.entries(limit=10, domain="security")] == []
    # outcome matches resolved entries only: the active entry is left out.
    assert [e.id for e in journal.entries(limit=10, outcome="falsified")] == [c.id, b.id]
    assert [e.id for e in journal.entries(limit=10, outcome="confirmed", domain="debugging")] == [a.id]
    assert [e.id for e in journal.entries(limit=10, since=c.created_at)] == [d.id, c.id]
    naive = c.created_at.astimezone(UTC).replace(tzinfo=None)
    assert [e.id for e in journal.entries(limit=10, since=naive)] == [d.id, c.id]
    future = datetime.now(UTC) + timedelta(days=1)
    assert journal.entries(limit=10, since=future) == []


def test_outbox_and_mark_persisted(journal: Journal, root: Path) -> None:
    assert journal.outbox() == []
    first = start(journal)
    journal.resolve(status="confirmed", result="r")
    second = start(journal)
    journal.resolve(status="falsified", result="r")
    start(journal)  # active entries are never in the outbox
    assert [e.id for e in journal.outbox()] == [first.id, second.id]
    journal.mark_persisted(first.id)
    assert [e.id for e in journal.outbox()] == [second.id]
    journal.mark_persisted(first.id)  # idempotent
    journal.mark_persisted("never-existed")
    journal.mark_persisted(second.id)
    assert journal.outbox() == []
    # The archive keeps the entries: persisting only clears the marker.
    assert len(journal.entries(limit=10)) == 3
    assert [e["event"] for e in log_events(root)].count("persisted") == 2
    with pytest.raises(ValidationError):
        journal.mark_persisted("../active.json")


def test_archive_cache_sees_other_instances_writes(journal: Journal, root: Path) -> None:
    start(journal)
    journal.resolve(status="confirmed", result="r")
    assert len(journal.entries(limit=10)) == 1  # fills journal's cache
    other = Journal(root, "session-b")
    try:
        for _ in range(3):
            start(other)
            other.resolve(status="falsified", result="r")
        assert len(journal.entries(limit=10)) == 4
        assert len(journal.outbox()) == 4
        journal.mark_persisted(journal.outbox()[0].id)
        assert len(other.outbox()) == 3
    finally:
        other.close()


def test_entries_over_a_large_archive_stays_fast(journal: Journal, root: Path) -> None:
    template = start(journal)
    journal.resolve(status="confirmed", result="r")
    resolved = journal.entries(limit=1)[0]
    base = resolved.created_at
    for i in range(2_000):
        ghap_id = str(uuid.uuid4())
        at = base - timedelta(minutes=i + 1)
        copy = resolved.model_copy(update={"id": ghap_id, "created_at": at, "updated_at": at})
        (root / "archive" / f"{ghap_id}.json").write_text(copy.model_dump_json())
    assert len(journal.entries(limit=5_000)) == 2_001  # parses the new files once
    timings = []
    for _ in range(20):
        began = time.perf_counter()
        listed = journal.entries(limit=20, domain=template.domain)
        timings.append(time.perf_counter() - began)
    assert listed[0].id == template.id and len(listed) == 20
    assert statistics.median(timings) < 0.040


def test_threads_sharing_one_journal_lose_nothing(journal: Journal) -> None:
    # The async tools call the journal through asyncio.to_thread: threads share its descriptor.
    start(journal)

    def work(n: int) -> None:
        for i in range(20):
            journal.update(note=f"{n}-{i}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(4)))
    active = journal.active()
    assert active is not None and active.iteration_count == 81
    assert len({it.note for it in active.iterations}) == 80


def test_no_temp_files_left(journal: Journal, root: Path) -> None:
    start(journal)
    journal.update(note="n")
    journal.resolve(status="confirmed", result="r")
    start(journal)
    start(journal)
    assert not [name for name in all_files(root) if name.endswith(".tmp")]


def test_stale_temp_files_are_swept(root: Path) -> None:
    root.mkdir(parents=True)
    (root / ".active.json.dead.tmp").write_text("{")
    j = Journal(root, "s")
    try:
        assert j.active() is None
    finally:
        j.close()
    assert not (root / ".active.json.dead.tmp").exists()


# --- crash recovery and corrupt files ----------------------------------------------


def test_interrupted_resolve_is_repaired(journal: Journal, root: Path) -> None:
    entry = start(journal)
    active_bytes = (root / "active.json").read_bytes()
    resolved = journal.resolve(status="confirmed", result="r")
    # A crash after writing the archive file, before the marker and the removal.
    (root / "outbox" / entry.id).unlink()
    (root / "active.json").write_bytes(active_bytes)

    fresh = Journal(root, "session-b")
    try:
        assert fresh.active() is None
        assert not (root / "active.json").exists()
        assert (root / "outbox" / entry.id).exists()
        assert fresh.outbox() == [resolved]
        assert fresh.entries(limit=10) == [resolved]
    finally:
        fresh.close()


def test_interrupted_resolve_is_repaired_before_start(journal: Journal, root: Path) -> None:
    entry = start(journal)
    active_bytes = (root / "active.json").read_bytes()
    journal.resolve(status="confirmed", result="r")
    (root / "outbox" / entry.id).unlink()
    (root / "active.json").write_bytes(active_bytes)
    # start must not archive the already-resolved entry a second time as abandoned.
    _, displaced = journal.start(
        domain="feature", strategy="ask-user", goal="g", hypothesis="h", action="a", prediction="p"
    )
    assert displaced is None
    archived = GhapEntry.model_validate_json((root / "archive" / f"{entry.id}.json").read_bytes())
    assert archived.resolution is not None and archived.resolution.status == "confirmed"


@pytest.mark.parametrize("content", [b"{not json", b'{"id": "x"}', b""])
def test_corrupt_active_is_set_aside(journal: Journal, root: Path, content: bytes) -> None:
    start(journal)
    (root / "active.json").write_bytes(content)
    with pytest.raises(StorageError) as err:
        journal.update(note="n")
    (aside,) = (root / "corrupt").iterdir()
    assert aside.name.startswith("active.json.")
    assert aside.read_bytes() == content  # never silently thrown away
    assert "corrupt" in err.value.message and "start_ghap" in err.value.message
    assert journal.active() is None
    start(journal)
    assert journal.active() is not None


def test_corrupt_active_reported_by_active_not_by_outbox(journal: Journal, root: Path) -> None:
    start(journal)
    (root / "active.json").write_text("garbage")
    assert journal.outbox() == []  # background work leaves the report to the user-facing calls
    assert (root / "active.json").exists()
    with pytest.raises(StorageError):
        journal.active()
    assert journal.active() is None


def test_corrupt_archive_file_is_set_aside_and_skipped(journal: Journal, root: Path) -> None:
    good = start(journal)
    journal.resolve(status="confirmed", result="r")
    bad = start(journal)
    journal.resolve(status="confirmed", result="r")
    (root / "archive" / f"{bad.id}.json").write_text('{"truncated": ')

    fresh = Journal(root, "session-b")
    try:
        assert [e.id for e in fresh.entries(limit=10)] == [good.id]
        assert [e.id for e in fresh.outbox()] == [good.id]
        (aside,) = (root / "corrupt").iterdir()
        assert aside.name.startswith(f"{bad.id}.json.")
        assert aside.read_text() == '{"truncated": '
        assert [e.id for e in fresh.entries(limit=10)] == [good.id]
    finally:
        fresh.close()


def test_archive_file_under_wrong_name_is_set_aside(journal: Journal, root: Path) -> None:
    entry = start(journal)
    journal.resolve(status="confirmed", result="r")
    os.replace(root / "archive" / f"{entry.id}.json", root / "archive" / "other.json")
    assert journal.entries(limit=10) == []
    assert [p.name.split(".json.")[0] for p in (root / "corrupt").iterdir()] == ["other"]


# --- several processes -------------------------------------------------------------


def run_workers(root: Path, body: str, count: int) -> list[str]:
    """Run ``body`` in ``count`` processes at once (``j`` is a Journal, ``n`` the worker number)."""
    # A barrier on pipes, not a sleep: each process reports ready once imported, and all are
    # released together, so their operations really overlap.
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from learning_memory.server.journal.journal import Journal
        n = int(sys.argv[1])
        j = Journal(Path(sys.argv[2]), f'proc-{n}')
        print('ready', flush=True)
        sys.stdin.readline()
        """
    ) + textwrap.dedent(body)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(n), str(root)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]
    for proc in procs:
        assert proc.stdout is not None
        # A process that dies before the barrier closes its stdout: readline returns "".
        assert proc.stdout.readline() == "ready\n", proc.communicate(timeout=60)[1]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


@pytest.mark.slow
def test_concurrent_updates_lose_nothing(journal: Journal, root: Path) -> None:
    entry = start(journal)
    per_process, processes = 25, 3
    run_workers(root, "for i in range(25):\n    j.update(note=f'{n}-{i}')\n", processes)

    final = GhapEntry.model_validate_json((root / "active.json").read_bytes())
    assert final.id == entry.id
    assert final.iteration_count == 1 + per_process * processes
    notes = [it.note or "" for it in final.iterations]
    assert sorted(notes) == sorted(f"{n}-{i}" for n in range(processes) for i in range(per_process))
    assert len(set(notes)) == len(notes)
    # Each process's updates stay in its own order.
    for n in range(processes):
        mine = [note for note in notes if note.startswith(f"{n}-")]
        assert mine == [f"{n}-{i}" for i in range(per_process)]
    assert len([e for e in log_events(root) if e["event"] == "update"]) == per_process * processes


@pytest.mark.slow
def test_concurrent_start_resolve_cycles_lose_nothing(root: Path) -> None:
    cycles, processes = 15, 3
    body = """
    from learning_memory.shared.errors import NotFoundError
    for i in range(15):
        entry, displaced = j.start(domain='testing', strategy='trial-and-error', goal=f'{n}-{i}',
                                   hypothesis='h', action='a', prediction='p')
        if displaced is not None:
            print('abandoned', displaced.id)
        print('started', entry.id)
        try:
            resolved = j.resolve(status='confirmed', result='r')
            print('resolved', resolved.id)
        except NotFoundError:
            pass
    """
    lines = [line.split() for out in run_workers(root, body, processes) for line in out.splitlines()]
    started = {ghap_id for kind, ghap_id in lines if kind == "started"}
    resolved = [ghap_id for kind, ghap_id in lines if kind == "resolved"]
    abandoned = [ghap_id for kind, ghap_id in lines if kind == "abandoned"]
    assert len(started) == cycles * processes

    j = Journal(root, "checker")
    try:
        active = j.active()
        archived = {
            p.stem: GhapEntry.model_validate_json(p.read_bytes()) for p in (root / "archive").iterdir()
        }
        still_active = {active.id} if active is not None else set()
        # Every started entry is archived exactly once or is still the active one.
        assert set(archived) | still_active == started
        assert not set(archived) & still_active
        assert len(resolved) + len(abandoned) == len(archived)
        assert set(resolved) | set(abandoned) == set(archived)
        assert {p.name for p in (root / "outbox").iterdir()} == set(archived)
        assert len(j.entries(limit=1000)) == len(started)
        for ghap_id, entry in archived.items():
            assert entry.resolution is not None
            expected = "abandoned" if ghap_id in abandoned else "confirmed"
            assert entry.resolution.status == expected
        assert not list((root / "corrupt").iterdir())
        assert not [name for name in all_files(root) if name.endswith(".tmp")]
    finally:
        j.close()
