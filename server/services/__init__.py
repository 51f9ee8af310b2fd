"""The service layer under the tools: what several tools (and the hook tools) share.

- ``lifespan``: :class:`AppServices`, built once per server (settings, the job transport, the
  GHAP journal, the loop store), and ``app_services(ctx)`` to reach it from a tool;
- ``jobs``: ``await_job``, a job run for a tool with its progress relayed to the client;
- ``context_assembly``: past work assembled for a query, and premortem warnings;
- ``persistence``: resolved GHAP entries stored for search, with retries and the outbox;
- ``fail_open``: work that must never hold the agent up (hooks, start_ghap's warnings);
- ``inputs``: input repair (UTF-8, clamping).

Tool modules import from here, never from one another.
"""

from __future__ import annotations

from learning_memory.server.services.jobs import await_job
from learning_memory.server.services.lifespan import AppServices, app_services, make_lifespan

__all__ = ["AppServices", "app_services", "await_job", "make_lifespan"]
