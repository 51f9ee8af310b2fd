"""``learning-memory status``: mode, Redis and worker health, live sessions, queue depths, folders,
versions."""

from __future__ import annotations

import platform
from importlib.metadata import version
from typing import Any

from redis.exceptions import RedisError

from learning_memory.server.transport.arq import connect
from learning_memory.shared import __version__
from learning_memory.shared.keys import Keys, Queue
from learning_memory.shared.sessions import live_sessions
from learning_memory.shared.settings import Settings
from learning_memory.shared.state import live_workers

STATUS_CONNECT_TIMEOUT_S = 1.0


async def collect_status(settings: Settings) -> dict[str, Any]:
    keys = Keys(settings.namespace)
    report: dict[str, Any] = {
        "queue_mode": {"configured": settings.queue},
        "redis": {"url": settings.redis_url, "reachable": False},
        "workers": [],
        "sessions": 0,
        "queues": {},
        "data_dir": str(settings.data_dir),
        "journal_dir": str(settings.journal_dir),
        "vector_store": settings.qdrant_url or f"embedded (Qdrant Edge in {settings.data_dir})",
        "versions": {
            "learning-memory-server": __version__,
            "python": platform.python_version(),
            **{name: version(name) for name in ("mcp", "arq", "redis")},
        },
    }
    redis = connect(settings, connect_timeout_s=STATUS_CONNECT_TIMEOUT_S)
    try:
        info = await redis.info("server")
        report["redis"].update(reachable=True, version=info.get("redis_version"))
        report["workers"] = [w.model_dump(mode="json") for w in await live_workers(redis, keys)]
        report["sessions"] = await live_sessions(redis, keys)
        for queue in Queue:
            report["queues"][queue.value] = await redis.zcard(keys.queue(queue))
    except (RedisError, OSError) as exc:
        report["redis"]["error"] = str(exc)
    finally:
        await redis.aclose(close_connection_pool=True)

    reachable = report["redis"]["reachable"]
    effective = settings.queue if settings.queue != "auto" else ("arq" if reachable else "inline")
    report["queue_mode"]["effective"] = effective
    if effective == "arq" and not report["workers"]:
        report["hint"] = (
            "No worker is running: `learning-memory serve` starts one, or run `learning-memory worker`."
        )
    return report
