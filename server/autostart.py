"""Start one detached worker when none is alive, so a Claude Code user never has to.

Several sessions may start at once: a Redis lock (SET NX with a TTL) lets one of them
spawn the worker; the others find the lock taken and wait for its heartbeat.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from redis.asyncio import Redis
from redis.exceptions import RedisError

from learning_memory.shared.keys import Keys
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings
from learning_memory.shared.state import live_workers

log = get_logger(__name__)
# Long enough for a worker to import torch, load the model and send its first heartbeat.
LOCK_TTL_S = 60
# A worker started for the sessions leaves once none needs it (an operator's worker stays).
IDLE_EXIT_FLAG = "--exit-when-idle"


def spawn_worker(settings: Settings) -> None:
    """Start ``learning-memory worker --exit-when-idle`` outside this process's session, logging to
    the data folder: it leaves once no session has needed it for a while.

    ``sh`` starts it in the background and exits at once, so the worker is adopted
    by init: no zombie is left behind, and it outlives this server.
    """
    settings.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.log_dir / "worker.log"
    with open(log_path, "ab") as log_file:
        subprocess.run(
            [
                "sh",
                "-c",
                'exec "$@" &',
                "sh",
                sys.executable,
                "-m",
                "learning_memory",
                "worker",
                IDLE_EXIT_FLAG,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            close_fds=True,
            # The server's own settings, whether they came from its environment or not.
            env={**os.environ, **settings.to_env()},
            check=True,
        )
    log.info("worker.autostarted", log=str(log_path))


async def ensure_worker(redis: Redis, settings: Settings) -> bool:
    """Start a worker if none is alive and no one else is starting one; True if we did."""
    keys = Keys(settings.namespace)
    try:
        if await live_workers(redis, keys):
            return False
        owner = f"{socket.gethostname()}:{os.getpid()}"
        if not await redis.set(keys.autostart_lock, owner, nx=True, ex=LOCK_TTL_S):
            return False
    except (RedisError, OSError) as exc:
        log.warning("worker.autostart_skipped", error=str(exc))
        return False
    spawn_worker(settings)
    return True
