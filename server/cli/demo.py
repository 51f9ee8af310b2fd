"""``learning-memory demo`` (what ``make run`` runs): a scripted session over stdio, the way
Claude Code talks to the server. Each capability adds its tools to this script."""

from __future__ import annotations

import json
from typing import Any

from server.cli.client import result_payload, stdio_session


def _show(title: str, payload: Any) -> None:
    print(f"\n## {title}")
    print(json.dumps(payload, indent=2, default=str))


async def run_demo() -> int:
    async with stdio_session() as client:
        tools = await client.list_tools()
        _show("tools/list", [tool.name for tool in tools.tools])

        ping = result_payload(await client.call_tool("ping", {}))
        _show("ping", ping)

        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        held = await client.call_tool("ping", {"delay_ms": 1500}, progress_callback=on_progress)
        _show("ping held 1.5 s on the worker (progress notifications seen)", len(seen))
        job_id = result_payload(held)["job_id"]
        _show("get_job_status", result_payload(await client.call_tool("get_job_status", {"job_id": job_id})))

        bad = await client.call_tool("ping", {"delay_ms": -1})
        _show("a bad argument is a tool error the model can act on", result_payload(bad))
        ok = ping.get("status") == "ok" and bad.is_error
    print("\ndemo finished:", "ok" if ok else "FAILED")
    return 0 if ok else 1
