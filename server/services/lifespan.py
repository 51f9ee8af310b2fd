"""What the lifespan builds once (:class:`AppServices`) and every tool reaches through its context."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from learning_memory.server.capture.recorder import Recorder
from learning_memory.server.hooks.values_cache import refresh_values_file
from learning_memory.server.journal.journal import Journal
from learning_memory.server.loops.store import LoopStore
from learning_memory.server.services.persistence import keep_draining
from learning_memory.server.transport import Transport, create_transport
from learning_memory.shared.fix_index import fix_index_path
from learning_memory.shared.jobs import ExecutorFactory
from learning_memory.shared.loop_settings import load_loop_settings
from learning_memory.shared.settings import Settings, get_settings


@dataclass
class AppServices:
    settings: Settings
    jobs: Transport
    # One per server process: an active GHAP entry from another session is an orphan.
    session_id: str
    _journal: Journal | None = None
    _loops: LoopStore | None = None
    _capture: Recorder | None = None
    # GHAP entries the Stop hook has reminded the agent of: once each, never on every stop.
    reminded: set[str] = field(default_factory=set)
    # Until when (monotonic) work that must not wait answers nothing: see services.fail_open.
    queue_quiet_until: float = 0.0

    @property
    def journal(self) -> Journal:
        """Opened on first use: a session that never tracks a GHAP creates no folder, and a
        read-only working directory fails only the GHAP tools, with a clear error, not the server."""
        if self._journal is None:
            self._journal = Journal(self.settings.journal_dir, self.session_id)
        return self._journal

    @property
    def capture(self) -> Recorder:
        """The session log the hooks write, in the data folder (shared by every worktree)."""
        if self._capture is None:
            self._capture = Recorder(
                self.settings.capture_dir,
                fix_index_path(self.settings.data_dir),
                enabled=self.settings.capture,
            )
        return self._capture

    @property
    def loops(self) -> LoopStore:
        """Opened on first use, like the journal; the limits are read from FSDD_LOOP_* (checked
        at start-up by ``serve``)."""
        if self._loops is None:
            self._loops = LoopStore(self.settings.state_folder, load_loop_settings())
        return self._loops


def make_lifespan(
    settings: Settings | None = None, executor: ExecutorFactory | None = None
) -> Callable[[MCPServer[AppServices]], AbstractAsyncContextManager[AppServices]]:
    """The lifespan builds the services once; ``settings`` default to the environment's, and
    ``executor`` runs jobs in this process in inline mode."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppServices]) -> AsyncIterator[AppServices]:
        resolved = settings or get_settings()
        jobs = await create_transport(resolved, executor)
        app = AppServices(settings=resolved, jobs=jobs, session_id=uuid.uuid4().hex)
        background = [
            asyncio.create_task(keep_draining(app, resolved.outbox_drain_interval_s), name="outbox-drain")
        ]
        if jobs.mode == "arq":
            # Values stored from another session or machine reach this project's next brief. In
            # inline mode only this process writes values (and refreshes the cache as it does), and
            # asking at start would load the vector store into the server for nothing.
            background.append(
                asyncio.create_task(refresh_values_file(app.jobs, app.settings), name="values-cache")
            )
        try:
            yield app
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await jobs.close()

    return lifespan


def app_services(ctx: Context[AppServices, Any]) -> AppServices:
    return ctx.request_context.lifespan_context
