"""The SessionStart brief: the active entry, values from the cache, recent lessons, the budget,
and failing open."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from learning_memory.server.hooks.session_brief import BUDGET_TOKENS, brief, journal_dir, main
from learning_memory.server.hooks.values_cache import write_values_cache
from learning_memory.shared.context_lines import estimate_tokens
from learning_memory.shared.contracts.learning import ValueRecord

NOW = "2026-11-23T10:00:00+00:00"


def entry(n: int, **resolution: object) -> dict[str, object]:
    return {
        "id": f"00000000-0000-0000-0000-{n:012d}",
        "session_id": "s",
        "domain": "debugging",
        "strategy": "read-the-error",
        "goal": f"goal number {n}",
        "hypothesis": "h",
        "action": "a",
        "prediction": "tests pass",
        "created_at": NOW,
        "updated_at": NOW,
        "iterations": [],
        "resolution": resolution or None,
    }


def resolved(n: int, **extra: object) -> dict[str, object]:
    return entry(n, status="falsified", result="r", confidence_tier="gold", resolved_at=NOW, **extra)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LMS_JOURNAL_DIR", raising=False)
    (tmp_path / ".claude" / "journal" / "archive").mkdir(parents=True)
    return tmp_path


def write_archive(project: Path, item: dict[str, object], mtime: float) -> None:
    path = project / ".claude" / "journal" / "archive" / f"{item['id']}.json"
    path.write_text(json.dumps(item))
    os.utime(path, (mtime, mtime))


def test_nothing_to_say_is_nothing(project: Path, tmp_path: Path) -> None:
    assert brief(project, tmp_path / "data") == ""
    out = io.StringIO()
    assert main(io.StringIO(json.dumps({"cwd": str(project)})), out) == 0
    assert out.getvalue() == ""


def test_active_entry_values_and_recent_lessons(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMS_DATA_DIR", str(tmp_path / "data"))
    active = entry(1)
    active["evidence"] = [{"summary": "tests: 4 passed, 1 failed (exit 1)"}]
    (project / ".claude" / "journal" / "active.json").write_text(json.dumps(active))
    cause = {"category": "wrong-assumption", "description": "the cache was never cold"}
    for n in range(2, 7):
        write_archive(project, resolved(n, root_cause=cause), mtime=1_000 + n)
    write_archive(project, entry(9, status="confirmed", result="ok", confidence_tier="silver"), mtime=2_000)
    value = ValueRecord(
        id="11111111-1111-1111-1111-111111111111",
        text="check the cache is cold before timing",
        axis="root_cause",
        cluster_id="cluster_root_cause_0",
        cluster_size=12,
        similarity_to_centroid=0.9,
        created_at=datetime.now(UTC),
        clustering_id="c",
        member_ghap_ids=["x"],
        centroid_distance=0.1,
        threshold_distance=0.2,
    )
    write_values_cache(tmp_path / "data", [value])

    text = brief(project, tmp_path / "data")
    assert "goal: goal number 1" in text and "last run: tests: 4 passed, 1 failed" in text
    assert f"[val:{value.id}] value, root_cause axis, 12 experiences: check the cache" in text
    lessons = [line for line in text.splitlines() if line.startswith("- [exp:")]
    # The newest three with something learned; the lesson-less confirmed entry is left out.
    assert [line.split("]")[0] for line in lessons] == [
        f"- [exp:00000000-0000-0000-0000-{n:012d}" for n in (6, 5, 4)
    ]
    assert "root cause (wrong assumption): the cache was never cold" in lessons[0]

    out = io.StringIO()
    main(io.StringIO(json.dumps({"cwd": str(project), "source": "compact"})), out)
    answer = json.loads(out.getvalue())["hookSpecificOutput"]
    assert answer == {"hookEventName": "SessionStart", "additionalContext": text}


def test_the_brief_keeps_to_its_budget(project: Path, tmp_path: Path) -> None:
    cause = {"category": "oversight", "description": "x" * 400}
    long = {**entry(1), "goal": "g" * 900, "hypothesis": "h" * 900, "prediction": "p" * 900}
    (project / ".claude" / "journal" / "active.json").write_text(json.dumps(long))
    for n in range(2, 12):
        write_archive(project, resolved(n, root_cause=cause), mtime=1_000 + n)
    assert estimate_tokens(brief(project, tmp_path)) <= BUDGET_TOKENS


def test_unreadable_files_are_left_out_and_bad_input_fails_open(project: Path, tmp_path: Path) -> None:
    (project / ".claude" / "journal" / "active.json").write_text("{not json")
    write_archive(project, {"id": "x"}, mtime=1)
    (project / ".claude" / "journal" / "archive" / "broken.json").write_text("[")
    (tmp_path / "data" / "cache").mkdir(parents=True)
    (tmp_path / "data" / "cache" / "values.json").write_text('{"not": "a list"}')
    assert brief(project, tmp_path / "data") == ""
    out = io.StringIO()
    assert main(io.StringIO("not json at all"), out) == 0 and out.getvalue() == ""


def test_journal_dir_follows_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMS_JOURNAL_DIR", "custom/journal")
    assert journal_dir(tmp_path) == tmp_path / "custom" / "journal"
    monkeypatch.setenv("LMS_JOURNAL_DIR", str(tmp_path / "abs"))
    assert journal_dir(Path("/elsewhere")) == tmp_path / "abs"


def test_the_ids_shown_are_logged_for_feedback(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from learning_memory.shared.contracts.capture import SessionEvent

    data = tmp_path / "data"
    monkeypatch.setenv("LMS_DATA_DIR", str(data))
    cause = {"category": "wrong-assumption", "description": "the cache was never cold"}
    for n in (2, 3):
        write_archive(project, resolved(n, root_cause=cause), mtime=1_000 + n)
    main(io.StringIO(json.dumps({"cwd": str(project), "session_id": "s-brief"})), io.StringIO())
    [log] = (data / "capture").glob("*/sessions/s-brief.jsonl")
    event = SessionEvent.model_validate_json(log.read_text())
    assert (event.type, event.via, event.session_id) == ("injected", "brief", "s-brief")
    assert event.items == [f"exp:00000000-0000-0000-0000-{n:012d}" for n in (3, 2)]

    main(io.StringIO(json.dumps({"cwd": str(project)})), io.StringIO())  # no session: nothing logged
    monkeypatch.setenv("LMS_CAPTURE", "off")
    main(io.StringIO(json.dumps({"cwd": str(project), "session_id": "s-off"})), io.StringIO())
    assert [path.name for path in (data / "capture").glob("*/sessions/*")] == ["s-brief.jsonl"]
