"""``learning-memory demo`` (what ``make run`` runs): a scripted session over stdio, the way
Claude Code talks to the server. Each capability adds its tools to this script."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client

from server.cli.client import result_payload, stdio_session

# This repository: `make run` indexes it and searches it.
REPO = Path(__file__).resolve().parents[2]
# The demo runs against the user's real data folder: it removes what it stores.
DEMO_MEMORIES = [
    ("To undo the last git commit but keep its changes, run git reset --soft HEAD~1.", "workflow"),
    ("The user prefers small pull requests with one concern each.", "preference"),
]


def _show(title: str, payload: Any) -> None:
    print(f"\n## {title}")
    print(json.dumps(payload, indent=2, default=str))


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    return result_payload(await client.call_tool(tool, arguments))


async def _memories(client: Client) -> bool:
    stored = [
        await _call(client, "store_memory", content=content, category=category, tags=["demo"])
        for content, category in DEMO_MEMORIES
    ]
    _show("store_memory", stored[0])
    found = await _call(client, "retrieve_memories", query="how do I revert my latest commit?", limit=2)
    _show("retrieve_memories('how do I revert my latest commit?')", found)
    _show("list_memories(tags=['demo'])", await _call(client, "list_memories", tags=["demo"]))
    deleted = [await _call(client, "delete_memory", id=memory["id"]) for memory in stored]
    _show("delete_memory (the demo cleans up after itself)", deleted)
    return bool(found.get("results")) and found["results"][0]["id"] == stored[0]["id"]


async def _ghap(client: Client) -> bool:
    started = await _call(
        client,
        "start_ghap",
        domain="testing",
        strategy="check-assumptions",
        goal="Demo (make run): check that the learning memory server works end to end",
        hypothesis="the server, the queue and the worker are all wired",
        action="run one GHAP cycle and search for it",
        prediction="search_experiences finds this entry",
    )
    _show("start_ghap", started)
    await _call(client, "update_ghap", note="the memory tools answered", action="resolve and search")
    resolved = await _call(
        client,
        "resolve_ghap",
        status="confirmed",
        result="every tool answered",
        lesson={"what_worked": "running make run after install"},
    )
    _show("resolve_ghap", resolved)
    found = await _call(client, "search_experiences", query="is the memory server wired end to end?", limit=1)
    _show("search_experiences('is the memory server wired end to end?')", found)
    # resolve_ghap answers only once the experience is stored. Earlier runs stored the same
    # words, so the best hit is a demo entry, not necessarily this run's.
    stored = resolved.get("confidence_tier") == "gold"
    return stored and bool(found.get("results")) and found["results"][0]["goal"] == started["goal"]


async def _code(client: Client) -> bool:
    # This repository, under its own project name; indexing is incremental, so a second
    # `make run` only looks at what changed.
    stats = await _call(client, "index_codebase", directory=str(REPO), project="learning-memory-server")
    while stats.get("status") == "running":
        await asyncio.sleep(0.5)
        status = await _call(client, "get_job_status", job_id=stats["job_id"])
        if status["state"] in ("complete", "failed"):
            stats = status.get("result") or status
    _show("index_codebase(this repository)", stats)
    query = "how long to wait before retrying a request"
    found = await _call(client, "search_code", query=query, project="learning-memory-server", limit=3)
    brief = [
        f"{hit['file_path']}:{hit['start_line']} {hit['qualified_name']}" for hit in found.get("results", [])
    ]
    _show(f"search_code({query!r})", brief)
    return bool(brief)


async def _loops(client: Client) -> bool:
    loop = await _call(client, "initialize_refinement_loop", loop_type="plan")
    _show("initialize_refinement_loop('plan')", loop)
    decisions = []
    for score in (62, 78, 88):  # a critic's scores for three drafts of a plan
        decision = await _call(client, "decide_loop_next_action", loop_id=loop["id"], current_score=score)
        _show(f"decide_loop_next_action(score {score})", decision)
        decisions.append(decision["status"])
    status = await _call(client, "get_loop_status", loop_id=loop["id"])
    _show("get_loop_status", status)
    return decisions == ["refine", "refine", "completed"] and status["score_history"] == [62, 78, 88]


async def run_demo() -> int:
    # The demo's GHAP entries go to a journal of their own, not the project's.
    journal = tempfile.mkdtemp(prefix="lms-demo-journal-")
    # Its loops too: they would push the user's own out of the ten that are kept.
    loop_state = tempfile.mkdtemp(prefix="lms-demo-state-")
    async with stdio_session({"LMS_JOURNAL_DIR": journal, "LMS_STATE_DIR": loop_state}) as client:
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
        remembered = await _memories(client)
        learned = await _ghap(client)
        searched = await _code(client)
        ok = ping.get("status") == "ok" and bad.is_error and remembered and learned and searched
        ok = await _loops(client) and ok
    print("\ndemo finished:", "ok" if ok else "FAILED")
    return 0 if ok else 1
