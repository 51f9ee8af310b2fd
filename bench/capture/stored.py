"""What the server and worker kept of the replayed sessions, read once the queues are quiet.

- ``mine_session`` jobs that ran (whoever queued them): their answers (episodes, stored, merged,
  absorbed), read from the job results in Redis, by session when the request names it.
- The fix index ``<data_dir>/capture/fixes.sqlite3`` when it exists: each table's rows.
- Session logs: ``*.jsonl`` files under ``<data_dir>/capture`` and their line counts.

Everything here tolerates absence: a server that captures nothing yet gives empty answers.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench.common import wait_until
from learning_memory.shared import arq_backend, codec
from learning_memory.shared.contracts.capture import MINE_SESSION
from learning_memory.shared.keys import Keys

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
            _add(found.totals, answer)
            session_id = str(_request_of(raw).get("session_id") or "")
            if session_id:
                _add(found.by_session.setdefault(session_id, {}), answer)
    finally:
        await redis.aclose()
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
    path = data_dir / "capture" / "fixes.sqlite3"
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
    folder = data_dir / "capture"
    if not folder.is_dir():
        return {}
    logs = {}
    for path in sorted(folder.rglob("*.jsonl")):
        with path.open(errors="replace") as lines:
            logs[str(path.relative_to(folder))] = sum(1 for _ in lines)
    return logs
