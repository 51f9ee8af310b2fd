"""``learning-memory demo`` (what ``make run`` runs): a scripted session over stdio, the way
Claude Code talks to the server. Each capability adds its tools to this script."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client

from learning_memory.cli import demo_project
from learning_memory.cli.client import result_payload, stdio_session
from learning_memory.cli.samples import demo_entries

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


async def _code(client: Client, project: Path) -> bool:
    stats = await _call(client, "index_codebase", directory=str(project), project=demo_project.NAME)
    while stats.get("status") == "running":
        await asyncio.sleep(0.5)
        status = await _call(client, "get_job_status", job_id=stats["job_id"])
        if status["state"] in ("complete", "failed"):
            stats = status.get("result") or status
    _show(f"index_codebase(the sample project {demo_project.NAME})", stats)
    query = "how long to wait before retrying a request"
    found = await _call(client, "search_code", query=query, project=demo_project.NAME, limit=3)
    brief = [
        f"{hit['file_path']}:{hit['start_line']} {hit['qualified_name']}" for hit in found.get("results", [])
    ]
    _show(f"search_code({query!r})", brief)
    # The sample's index leaves the user's data folder with the demo.
    await _call(client, "delete_project_index", project=demo_project.NAME)
    return any("backoff_delay" in hit for hit in brief)


async def _git(client: Client) -> bool:
    # The server looks at LMS_REPO_PATH; the demo sets it to the sample project.
    query = "wait longer after each failed payment"
    found = await _call(client, "search_commits", query=query, limit=3)
    while found.get("status") == "running":  # a first, cold index of a long history
        await asyncio.sleep(0.5)
        status = await _call(client, "get_job_status", job_id=found["job_id"])
        if status["state"] in ("complete", "failed"):
            found = status.get("result") or status
    if "error" in found:  # e.g. a copy of the sources without .git
        _show("search_commits (no repository here)", found)
        return False
    brief = [f"{hit['sha'][:10]} {hit['message'].splitlines()[0]}" for hit in found.get("results", [])]
    _show(f"search_commits({query!r})", brief)
    hot = await _call(client, "get_churn_hotspots", days=90, limit=5)
    churn = [
        f"{row['file_path']}: {row['change_count']} commits, +{row['total_insertions']} "
        f"-{row['total_deletions']}, {len(row['authors'])} author(s)"
        for row in hot.get("results", [])
    ]
    _show("get_churn_hotspots(days=90, limit=5)", churn)
    return bool(brief) and bool(churn)


def _story(member: dict[str, Any]) -> str:
    parts = ("goal", "hypothesis", "action", "prediction")
    return "\n".join(f"{part.capitalize()}: {member[part]}" for part in parts)[:500]


async def _model_ready(client: Client) -> None:
    """Wait (bounded) until a job that embeds answers: the first one loads the model, which a
    busy machine can take longer over than a tool waits."""
    for _ in range(60):
        answer = await _call(client, "retrieve_memories", query="warm-up", limit=1)
        if isinstance(answer, dict) and answer.get("status") != "running" and "error" not in answer:
            return
        await asyncio.sleep(1)


async def _learning(client: Client) -> bool:
    """A retrospective over the bundled sample experiences: cluster, read, validate, store."""
    await _model_ready(client)
    for sample in demo_entries():
        await _call(client, "start_ghap", **sample.start)
        await _call(client, "resolve_ghap", **sample.resolve)
    clusters = await _call(client, "get_clusters", axis="full")
    _show(f"get_clusters('full') over {len(demo_entries())} sample experiences", clusters)
    members = await _call(client, "get_cluster_members", cluster_id="cluster_full_0", limit=5)
    _show("get_cluster_members('cluster_full_0', limit=5): goals", [m["goal"] for m in members["members"]])
    unrelated = "Water the office plants twice a week."
    refused = await client.call_tool(
        "store_value", {"text": unrelated, "cluster_id": "cluster_full_0", "axis": "full"}
    )
    _show(f"store_value({unrelated!r}) is refused, with the metrics", result_payload(refused))
    # In a cluster's own words: its most typical stories, checked first; the first that fits is stored
    # (the threshold is strict: a story at a cluster's edge may not fit).
    checked: dict[str, Any] = {}
    value, target = "", "cluster_full_0"
    for cluster in clusters.get("clusters", []):
        target = cluster["cluster_id"]
        found = await _call(client, "get_cluster_members", cluster_id=target, limit=3)
        for member in found["members"]:
            value = _story(member)
            checked = await _call(client, "validate_value", text=value, cluster_id=target)
            if checked.get("valid"):
                break
        if checked.get("valid"):
            break
    _show(f"validate_value(a typical story of {target})", checked)
    stored = await _call(client, "store_value", text=value, cluster_id=target, axis="full")
    _show(
        "store_value", {key: stored.get(key) for key in ("id", "cluster_id", "cluster_size", "clustering_id")}
    )
    listed = await _call(client, "list_values", axis="full")
    # What a Claude Code session is shown of all this when a task like a past one comes up.
    task = members["members"][0]["goal"] if members.get("members") else "fix the failing test"
    context = await _call(client, "assemble_context", query=task, budget_tokens=300)
    _show(f"assemble_context({task!r}, budget_tokens=300)", context.get("text"))
    warnings = await _call(client, "get_premortem_warnings", goal=task)
    _show("get_premortem_warnings: goals", [w["goal"] for w in warnings.get("warnings", [])])
    return (
        clusters.get("count", 0) >= 2
        and refused.is_error
        and bool(checked.get("valid"))
        and listed.get("count") == 1
        and context.get("count", 0) >= 1
    )


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
    project = demo_project.write(Path(tempfile.mkdtemp(prefix="lms-demo-project-")))
    env = {"LMS_JOURNAL_DIR": journal, "LMS_REPO_PATH": str(project), "LMS_STATE_DIR": loop_state}
    try:
        ok = await _main_session(env, project)
    finally:
        for folder in (journal, loop_state, project.parent):
            shutil.rmtree(folder, ignore_errors=True)
    # The learning step gets a session of its own, in a throwaway data folder (jobs run in that
    # server process): its 64 sample experiences must not join the user's real ones.
    sandbox = tempfile.mkdtemp(prefix="lms-demo-learning-")
    sandbox_env = {
        "LMS_QUEUE": "inline",
        "LMS_DATA_DIR": str(Path(sandbox) / "data"),
        "LMS_JOURNAL_DIR": str(Path(sandbox) / "journal"),
    }
    try:
        async with stdio_session(sandbox_env) as client:
            retro = await _learning(client)
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    ok = ok and retro
    print("\ndemo finished:", "ok" if ok else "FAILED")
    return 0 if ok else 1


async def _main_session(env: dict[str, str], project: Path) -> bool:
    """Every tool but the learning ones, against the user's data folder (what it stores, it removes)."""
    async with stdio_session(env) as client:
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
        searched = await _code(client, project)
        history = await _git(client)
        ok = ping.get("status") == "ok" and bad.is_error and remembered and learned and searched and history
        return await _loops(client) and ok
