"""The MCP calls every context benchmark makes: a tool's payload, a hook's text answer and the
context it injects, under one deadline."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from mcp import Client

from bench.common import BenchError
from learning_memory.cli.client import result_payload

# The ids ([exp:…], [val:…], [mem:…]) a context block shows for each item it injects.
ITEM_ID = re.compile(r"\[((?:exp|val|mem):[^\]\s]+)\]")
# How long one hook call may take before the bench calls it stuck: far above any target, so a
# slow answer is measured, not cut.
CALL_TIMEOUT_S = 30.0


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """A tool's payload; an error answer stops the bench."""
    result = await asyncio.wait_for(client.call_tool(tool, arguments), CALL_TIMEOUT_S)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def hook_text(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, float]:
    """A hook tool's text answer (what Claude Code reads as the hook's stdout) and its latency."""
    started = time.perf_counter()
    result = await asyncio.wait_for(client.call_tool(tool, arguments), CALL_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise BenchError(f"{tool} answered an error, but hooks must fail open: {result.content}")
    return "".join(getattr(block, "text", "") for block in result.content), elapsed


def injected_context(text: str) -> str:
    """The additionalContext of a hook answer ('' for an empty answer or a control object)."""
    if not text.strip():
        return ""
    answer = json.loads(text)
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))
