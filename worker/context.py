"""What a job function gets: the worker's long-lived services plus this run's id, try and progress."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from shared import __version__
from shared.jobs import WorkerIdentity
from shared.settings import Settings


class ProgressReporter(Protocol):
    async def __call__(
        self, current: float, total: float | None = None, message: str | None = None
    ) -> None: ...


async def no_progress(current: float, total: float | None = None, message: str | None = None) -> None:
    """For callers that do not watch progress."""


def new_identity() -> WorkerIdentity:
    host = socket.gethostname()
    pid = os.getpid()
    return WorkerIdentity(
        id=f"{host}-{pid}-{uuid.uuid4().hex[:6]}",
        host=host,
        pid=pid,
        version=__version__,
        started_at=datetime.now(UTC),
    )


@dataclass
class WorkerServices:
    """Built once per worker process (lazily, on first need, in inline mode).

    Later capabilities hang their embedder, vector store and metadata store here.
    """

    settings: Settings
    identity: WorkerIdentity = field(default_factory=new_identity)

    async def close(self) -> None:
        """Release what the services hold; called once at shutdown."""


@dataclass
class JobContext:
    services: WorkerServices
    job_id: str
    job_try: int
    report: ProgressReporter = no_progress
