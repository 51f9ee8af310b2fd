"""What the server and worker kept of the replayed sessions, read once the queues are quiet.

- ``mine_session`` jobs that ran (whoever queued them): their answers, read from the job results
  in Redis, by session when the request names it. A job mines its session's whole log, so a
  session's ``episodes`` is its latest job's; ``stored``, ``merged`` and ``absorbed`` count what
  each job added, and add up.
- The fix index ``<data_dir>/capture/fixes.sqlite3`` when it exists: each table's rows.
- Session logs: ``*.jsonl`` files under ``<data_dir>/capture`` and their line counts.
- Mined episodes as text to match labels with: an ``episodes`` row of the fix index names its
  session and the times of its first and last event, which the session log turns into those
  events' ids (Claude Code's tool_use ids); its fixes add the files. Other rows are kept whole.

Everything here tolerates absence: a server that captures nothing yet gives empty answers.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench.common import wait_until
from learning_memory.shared import arq_backend, codec
from learning_memory.shared.contracts.capture import MINE_SESSION
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.keys import Keys
from learning_memory.shared.paths import capture_dir

MAX_ROWS = 5_000


@dataclass
class Mined:
    """The ``mine_session`` answers, summed, and by session id when known."""

    jobs: int = 0
    failed_jobs: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    by_session: dict[str, dict[str, int]] = field(default_factory=dict)


async def _busy(redis: Redis, keys: Keys) -> bool:
    for queue in keys.queues:
        if await redis.zcard(queue):
            return True
    pattern = arq_backend.in_progress_key(f"{keys.namespace}.*")
    async for _ in redis.scan_iter(match=pattern, count=500):
        return True
    return False


async def settle(redis_url: str, namespace: str, timeout_s: float) -> float | None:
    """Wait until no job is queued or running; seconds that took, None when it never happened."""
    redis = Redis.from_url(redis_url)
    keys = Keys(namespace)
    try:

        async def quiet() -> bool:
            return not await _busy(redis, keys)

        try:
            return await wait_until(quiet, timeout_s=timeout_s, what="the job queues to empty")
        except TimeoutError:
            return None
    finally:
        await redis.aclose()


def _add(into: dict[str, int], answer: dict[str, Any]) -> None:
    for key, value in answer.items():
        if isinstance(value, int) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value


def _request_of(raw: bytes) -> dict[str, Any]:
    """The request a job result carries (arq keeps the job's arguments beside its result)."""
    with contextlib.suppress(ValueError, TypeError, AttributeError, IndexError):
        args = codec.loads(raw).get("a") or []
        if args and isinstance(args[0], dict):
            return args[0]
    return {}


async def mined(redis_url: str, namespace: str) -> Mined:
    redis = Redis.from_url(redis_url)
    found = Mined()
    answers: list[tuple[str, float, dict[str, Any]]] = []
    try:
        pattern = arq_backend.result_key(f"{namespace}.*")
        async for key in redis.scan_iter(match=pattern, count=500):
            raw = await redis.get(key)
            if raw is None:
                continue
            outcome = arq_backend.decode_result(raw)
            if outcome.function != MINE_SESSION.name:
                continue
            found.jobs += 1
            envelope = outcome.value
            answer = envelope.get("ok") if outcome.success and isinstance(envelope, dict) else None
            if not isinstance(answer, dict):
                found.failed_jobs += 1
                continue
            session_id = str(_request_of(raw).get("session_id") or "")
            finished = outcome.finished_at.timestamp() if outcome.finished_at else 0.0
            answers.append((session_id, finished, answer))
    finally:
        await redis.aclose()
    for session_id, _, answer in sorted(answers, key=lambda a: (a[0], a[1])):
        if not session_id:
            _add(found.totals, answer)
            continue
        counts = found.by_session.setdefault(session_id, {})
        episodes = answer.get("episodes")
        _add(counts, {k: v for k, v in answer.items() if k != "episodes"})
        if isinstance(episodes, int):
            counts["episodes"] = episodes  # the latest job's: each mines the whole log
    for counts in found.by_session.values():
        _add(found.totals, counts)
    return found


async def forget_results(redis_url: str, namespace: str) -> None:
    """arq's result keys are outside our namespace: remove this run's, as ``serving`` does ours."""
    redis = Redis.from_url(redis_url)
    try:
        keys = [k async for k in redis.scan_iter(match=f"arq:*{namespace}.*", count=1000)]
        for start in range(0, len(keys), 1000):
            await redis.delete(*keys[start : start + 1000])
    finally:
        await redis.aclose()


def fix_index(data_dir: Path) -> dict[str, list[dict[str, Any]]] | None:
    """Every table of ``capture/fixes.sqlite3`` as rows, or None when the file does not exist."""
    path = fix_index_path(data_dir)
    if not path.exists():
        return None
    tables: dict[str, list[dict[str, Any]]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            rows = db.execute(f'SELECT * FROM "{name}" LIMIT {MAX_ROWS}').fetchall()
            tables[name] = [{k: _plain(row[k]) for k in row.keys()} for row in rows]
    return tables


def _plain(value: Any) -> Any:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def session_logs(data_dir: Path) -> dict[str, int]:
    """Lines of each session log the server wrote (path relative to ``<data_dir>/capture``)."""
    folder = capture_dir(data_dir)
    if not folder.is_dir():
        return {}
    logs = {}
    for path in sorted(folder.rglob("*.jsonl")):
        with path.open(errors="replace") as lines:
            logs[str(path.relative_to(folder))] = sum(1 for _ in lines)
    return logs


def _event_times(data_dir: Path) -> dict[str, list[tuple[float, str]]]:
    """Each session's logged events as (time, id)."""
    times: dict[str, list[tuple[float, str]]] = {}
    for path in capture_dir(data_dir).rglob("*.jsonl"):
        with path.open(errors="replace") as lines:
            for raw in lines:
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    event = json.loads(raw)
                    at = datetime.fromisoformat(str(event["at"]).replace("Z", "+00:00")).timestamp()
                    times.setdefault(str(event["session_id"]), []).append((at, str(event["id"])))
    return times


def _at(times: list[tuple[float, str]], moment: Any) -> str:
    """The id of the event logged at ``moment`` (seconds since the epoch), or ''."""
    with contextlib.suppress(TypeError, ValueError):
        wanted = float(moment)
        return next((event_id for at, event_id in times if abs(at - wanted) < 1e-3), "")
    return ""


def episode_records(data_dir: Path, tables: dict[str, list[dict[str, Any]]] | None) -> list[str]:
    """The fix index's episodes as text naming their first and last events and their files."""
    if not tables:
        return []
    times = _event_times(data_dir)
    files: dict[str, list[str]] = {}
    for fix in tables.get("fixes", []):
        files.setdefault(str(fix.get("episode_id")), []).append(str(fix.get("files", "")))
    records = []
    for row in tables.get("episodes", []):
        session_times = times.get(str(row.get("session")), [])
        first, last = _at(session_times, row.get("started_at")), _at(session_times, row.get("ended_at"))
        fixed = " ".join(files.get(str(row.get("episode_id")), []))
        records.append(f"episode {row.get('episode_id')} first {first} last {last} files {fixed}")
    return records
