"""A real MCP client that spawns ``learning-memory serve`` over stdio, as Claude Code does."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult


def server_params(env: dict[str, str] | None = None) -> StdioServerParameters:
    # The server's INFO lines would bury the result on the terminal; a level the user set wins.
    quiet = {} if "LMS_LOG_LEVEL" in os.environ else {"LMS_LOG_LEVEL": "WARNING"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "learning_memory", "serve"],
        env={**os.environ, **quiet, **(env or {})},
    )


@asynccontextmanager
async def stdio_session(env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    async with Client(server_params(env)) as client:
        yield client


def result_payload(result: CallToolResult) -> Any:
    """A tool result as JSON: its structured content, else its text parsed when it is JSON."""
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    text = "".join(getattr(block, "text", "") for block in result.content)
    try:
        return json.loads(text)
    except ValueError:
        return text
