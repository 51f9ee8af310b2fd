"""arq entry point: ``arq worker.main.WorkerSettings`` (or ``learning-memory worker``).

Settings are read at import, so a bad ``LMS_*`` value stops the worker before it starts.
"""

from __future__ import annotations

from arq.connections import RedisSettings

from shared import codec
from shared.keys import Keys, Queue
from shared.settings import get_settings
from worker.arq_jobs import arq_functions
from worker.process import HEALTH_CHECK_INTERVAL_S, run_worker_process

_settings = get_settings()


class WorkerSettings:
    # The shell worker never polls (see worker.process); its queue name makes
    # ``arq --check`` read the interactive queue's health key.
    functions = arq_functions()
    queue_name = Keys(_settings.namespace).queue(Queue.INTERACTIVE)
    redis_settings = RedisSettings.from_dsn(_settings.redis_url)
    on_startup = run_worker_process
    health_check_interval = HEALTH_CHECK_INTERVAL_S
    job_serializer = codec.dumps
    job_deserializer = codec.loads
