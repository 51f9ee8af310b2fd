"""What the hooks showed the agent, and what followed: read from the session logs kept under the
capture folder (every ``injected`` event, decided or not) and from the fix index's ``feedback``
table (one row per item shown and episode decided, kept after the logs are pruned).

Blocking reads (files, SQLite): callers run them off the event loop.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.fix_store import open_reader
from learning_memory.shared.log import get_logger
from learning_memory.shared.paths import capture_dir
from learning_memory.worker.capture.session_log import parse_events

log = get_logger(__name__)
# Bounds on what one call reads: the newest logs, and of each log its first bytes.
MAX_LOGS = 1_000
MAX_LOG_BYTES = 8 * 1024 * 1024
_INJECTED = b'"type":"injected"'
FIRST_LINES = 5  # read for a log's project: a torn first line is skipped


@dataclass(frozen=True)
class Shown:
    item: str  # context id
    via: str
    at: datetime
    session_id: str
    project: str
    helped: bool | None = None  # None: no decided episode followed (yet)


def session_logs(data_dir: Path) -> list[Path]:
    """Every session log kept, newest (last written) first, at most MAX_LOGS."""
    found = []
    for path in capture_dir(data_dir).glob("*/sessions/*.jsonl"):
        try:
            found.append((path.stat().st_mtime, path))
        except FileNotFoundError:  # pruned meanwhile
            continue
    found.sort(key=lambda entry: (-entry[0], str(entry[1])))
    return [path for _, path in found[:MAX_LOGS]]


def _lines(path: Path, only_injected: bool = False) -> Iterator[str]:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_LOG_BYTES)
    except FileNotFoundError:
        return
    for line in data.splitlines():
        if not only_injected or _INJECTED in line:
            yield line.decode("utf-8", errors="replace")


def read_events(path: Path, only_injected: bool = False) -> list[SessionEvent]:
    """The log's events (only its ``injected`` ones: the others are not parsed)."""
    return parse_events(_lines(path, only_injected))


def log_project(path: Path) -> str | None:
    """The project a log belongs to (its first readable event says it)."""
    try:
        with path.open("rb") as file:
            for _, line in zip(range(FIRST_LINES), file, strict=False):
                events = parse_events([line.decode("utf-8", errors="replace")])
                if events:
                    return events[0].project
    except FileNotFoundError:
        pass
    return None


def shown_in_logs(data_dir: Path, project: str | None) -> list[Shown]:
    """Every item shown in the kept logs (of ``project`` when given), newest first."""
    shown: list[Shown] = []
    for path in session_logs(data_dir):
        for event in read_events(path, only_injected=True):
            if event.type != "injected" or (project is not None and event.project != project):
                continue
            shown += [
                Shown(item, event.via or "", event.at, event.session_id, event.project)
                for item in event.items
            ]
    shown.sort(key=lambda entry: entry.at, reverse=True)
    return shown


def _feedback(data_dir: Path, sql: str, params: tuple[object, ...]) -> list[sqlite3.Row]:
    path = fix_index_path(data_dir)
    if not path.exists():  # nothing mined yet
        return []
    try:
        conn = open_reader(path)
    except sqlite3.Error as exc:
        log.debug("browse.fix_index_unreadable", path=str(path), error=repr(exc))
        return []
    try:
        return list(conn.execute(sql, params).fetchall())
    except sqlite3.Error as exc:  # a file written before the table existed
        log.debug("browse.feedback_unreadable", path=str(path), error=repr(exc))
        return []
    finally:
        conn.close()


def _where(project: str | None) -> tuple[str, tuple[object, ...]]:
    return ("WHERE project = ?", (project,)) if project is not None else ("", ())


def shown_with_outcome(data_dir: Path, project: str | None, limit: int) -> list[Shown]:
    """The latest items shown whose episode was decided, newest first (one per item and session:
    helped if any episode it bore on went green)."""
    where, params = _where(project)
    rows = _feedback(
        data_dir,
        "SELECT item, session, project, MIN(via) AS via, MAX(helped) AS helped, MIN(shown_at) AS shown_at "
        f"FROM feedback {where} GROUP BY item, session, project ORDER BY shown_at DESC LIMIT ?",
        (*params, limit),
    )
    return [
        Shown(
            item=row["item"],
            via=row["via"],
            at=datetime.fromtimestamp(row["shown_at"], UTC),
            session_id=row["session"],
            project=row["project"],
            helped=bool(row["helped"]),
        )
        for row in rows
    ]


def outcomes(data_dir: Path, project: str | None) -> dict[tuple[str, str], bool]:
    """By (item, session): whether showing it helped (any decided episode that went green)."""
    where, params = _where(project)
    rows = _feedback(
        data_dir,
        f"SELECT item, session, MAX(helped) AS helped FROM feedback {where} GROUP BY item, session",
        params,
    )
    return {(row["item"], row["session"]): bool(row["helped"]) for row in rows}


def ever_shown(data_dir: Path, project: str | None) -> set[str]:
    """Every item shown as far as the records tell: the feedback table and the kept logs."""
    where, params = _where(project)
    rows = _feedback(data_dir, f"SELECT DISTINCT item FROM feedback {where}", params)
    return {row["item"] for row in rows} | {entry.item for entry in shown_in_logs(data_dir, project)}
