"""An in-process MCP client on its own event loop thread, callable from synchronous code.

Hypothesis drives synchronous tests, while the SDK's client holds an anyio task group
that must be entered and left in one task: so the client lives in one long task on a
background loop, and each call is handed to that loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from learning_memory.shared.settings import Settings, load_settings

CALL_TIMEOUT_S = 120


class ThreadedClient:
    def __init__(self, loop: asyncio.AbstractEventLoop, client: Client) -> None:
        self._loop = loop
        self._client = client

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        future = asyncio.run_coroutine_threadsafe(self._client.call_tool(tool, arguments), self._loop)
        return future.result(CALL_TIMEOUT_S)


@contextmanager
def threaded_client(server: Any) -> Iterator[ThreadedClient]:
    loop = asyncio.new_event_loop()
    ready: asyncio.Future[Client] = loop.create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        try:
            async with Client(server) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    thread = threading.Thread(target=loop.run_until_complete, args=(hold(),), daemon=True)
    thread.start()
    try:
        client = asyncio.run_coroutine_threadsafe(_wait(ready), loop).result(CALL_TIMEOUT_S)
        yield ThreadedClient(loop, client)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(CALL_TIMEOUT_S)
        loop.close()


async def _wait(ready: asyncio.Future[Client]) -> Client:
    return await ready


def ok(client: ThreadedClient, tool: str, **arguments: Any) -> Any:
    """Call a tool that must succeed; its JSON result."""
    from learning_memory.cli.client import result_payload

    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


def error(client: ThreadedClient, tool: str, **arguments: Any) -> dict[str, str]:
    """Call a tool that must fail; its ``{"type", "message"}``."""
    import json

    result = client.call(tool, arguments)
    assert result.is_error, result.content
    return json.loads(result.content[0].text)["error"]  # type: ignore[no-any-return,union-attr]


def inline_settings(root: Path, embedding_model: str = "hashing:384", **overrides: Any) -> Settings:
    """Inline-mode settings whose data and journal live under ``root`` (a model-free embedder
    by default); ``overrides`` replace any of them."""
    values: dict[str, Any] = {
        "queue": "inline",
        "data_dir": root / "data",
        "journal_dir": root / "journal",
        "embedding_model": embedding_model,
    }
    return load_settings(**{**values, **overrides})


@contextmanager
def inline_client(
    root: Path, embedding_model: str = "hashing:384", **overrides: Any
) -> Iterator[ThreadedClient]:
    """A client to an inline server built from :func:`inline_settings`."""
    from learning_memory.composition import build_server

    with threaded_client(build_server(inline_settings(root, embedding_model, **overrides))) as client:
        yield client
