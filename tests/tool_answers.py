"""Every tool's answers, captured: a fixed script of calls through an in-process MCP client
(inline mode, hashing embedder) over every tool, with each answer's text, structured content and
error flag recorded, and what changes from run to run (ids, times, latencies, the temporary
folder) masked. ``tests/unit/test_tool_answers.py`` compares a fresh capture with the one kept
in ``tests/fixtures/tool_answers.json``: what a client reads of any tool does not change unnoticed.

When an answer is meant to change, write the capture anew and review its diff:
``.venv/bin/python -m tests.tool_answers tests/fixtures/tool_answers.json``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from tests.git_repo import build_repo
from tests.mcp_thread import inline_settings

FIXTURE = Path(__file__).parent / "fixtures" / "tool_answers.json"
CODE_FIXTURES = Path(__file__).parent / "fixtures" / "code"
CHECKOUT = str(Path(__file__).resolve().parent.parent)
PLACEHOLDER_KINDS = {
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "sha": r"\b[0-9a-f]{40}\b",
    "hex": r"\b[0-9a-f]{32}\b",
    "project": r"\brepo-[0-9a-f]{16}\b",  # the checkout the answers were captured in
}
# A time's digits change; how it is written (a fraction or not, "Z" or "+00:00") must not.
TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
# Values of these keys change on every run: a loop's id, a process, a clock.
VOLATILE_NUMBERS = ("duration_ms", "round_trip_ms", "pid", "job_try", "tries")
VOLATILE_STRINGS = ("host", "clustering_id", "session_id", "job_id", "head")

# Not a tool: the capture waits for the code index's vectors before it goes on.
WAIT_FOR_VECTORS = "(wait for vectors)"
WORKER_ID = re.compile(r'"[^"]+-\d+-[0-9a-f]{6}"')

Args = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class Masker:
    """Replaces what varies between runs with placeholders numbered by first appearance, so that
    an answer that repeats an earlier id still shows it is the same one."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.seen: dict[str, str] = {}
        self.loop_ids: set[str] = set()

    def _named(self, kind: str, value: str) -> str:
        if value not in self.seen:
            number = sum(1 for v in self.seen.values() if v.startswith(f"<{kind}:")) + 1
            self.seen[value] = f"<{kind}:{number}>"
        return self.seen[value]

    def _replace(self, kind: str, match: re.Match[str]) -> str:
        return self._named(kind, match.group(0))

    def __call__(self, text: str) -> str:
        text = text.replace(self.root, "<root>").replace(CHECKOUT, "<checkout>")
        for loop_id in self.loop_ids:
            text = text.replace(loop_id, self._named("loop", loop_id))
        for kind, pattern in PLACEHOLDER_KINDS.items():
            text = re.sub(pattern, functools.partial(self._replace, kind), text)
        text = TIME.sub(lambda m: f"<time{'.f' if m.group(1) else ''}{m.group(2) or ''}>", text)
        text = WORKER_ID.sub('"<worker>"', text)
        for key in VOLATILE_NUMBERS:
            text = re.sub(rf'("{key}": ?)-?[0-9.e+-]+', r"\g<1>0", text)
        for key in VOLATILE_STRINGS:
            text = re.sub(rf'("{key}": ?)"[^"]*"', r'\g<1>"<volatile>"', text)
        return text


def _entries(count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``count`` resolved GHAP stories on three themes, deterministic, for the learning tools."""
    themes = [
        (
            "debugging",
            "systematic-elimination",
            "the cache returns stale user profiles",
            "cache invalidation",
        ),
        ("performance", "research-first", "the report query is slow on large tenants", "missing index"),
        ("testing", "check-assumptions", "the checkout test fails on every other run", "shared fixture"),
    ]
    stories = []
    for number in range(count):
        domain, strategy, problem, cause = themes[number % 3]
        start = {
            "domain": domain,
            "strategy": strategy,
            "goal": f"fix it: {problem} (case {number})",
            "hypothesis": f"the {cause} is the reason {problem}",
            "action": f"look at the {cause} first",
            "prediction": f"after the change {problem.split(' ', 1)[1]} no more",
        }
        if number % 4 == 3:
            resolve: dict[str, Any] = {
                "status": "falsified",
                "result": f"the {cause} was fine",
                "surprise": "the clock of the build machine was off",
                "root_cause": {"category": "wrong-assumption", "description": f"not the {cause}"},
            }
        else:
            resolve = {
                "status": "confirmed",
                "result": f"the {cause} was the reason",
                "lesson": {"what_worked": f"fix the {cause}", "takeaway": f"check the {cause} first"},
            }
        stories.append((start, resolve))
    return stories


def script(root: Path) -> list[tuple[str, Args]]:
    """The calls, in order; an argument builder reads earlier answers (by call label)."""
    repo = str(root / "repo")
    calls: list[tuple[str, Args]] = [
        ("ping", {}),
        ("get_job_status", {"job_id": "no-such-job"}),
        ("no_such_tool", {}),
        ("store_memory", {"category": "fact"}),
        # memory
        (
            "store_memory",
            {"content": "The staging database is reset every Sunday night.", "category": "fact"},
        ),
        (
            "store_memory",
            {
                "content": "Prefer small pull requests with one concern each.",
                "category": "preference",
                "importance": 1.5,
                "tags": ["review", " review ", "style"],
            },
        ),
        ("store_memory", {"content": "   ", "category": "event"}),
        ("store_memory", {"content": "Deploys go out on Tuesdays.", "category": "bogus"}),
        ("retrieve_memories", {"query": "when is the staging database reset"}),
        ("retrieve_memories", {"query": "  "}),
        ("retrieve_memories", {"query": "pull requests", "category": "preference", "limit": 500}),
        ("list_memories", {}),
        ("list_memories", {"tags": ["style"], "limit": 0}),
        ("delete_memory", lambda seen: {"id": seen["store_memory#2"]["id"]}),
        ("delete_memory", {"id": "not-an-id"}),
        # GHAP
        ("get_active_ghap", {}),
        ("list_ghap_entries", {}),
        ("update_ghap", {"note": "nothing active"}),
        (
            "start_ghap",
            {
                "domain": "testing",
                "strategy": "check-assumptions",
                "goal": "fix the flaky checkout payment test",
                "hypothesis": "the payment mock is shared between tests",
                "action": "give every test its own payment mock",
                "prediction": "the checkout tests pass ten runs in a row",
            },
        ),
        ("update_ghap", {}),
        ("update_ghap", {"action": "reset the payment mock in a fixture", "note": "simpler"}),
        ("get_active_ghap", {}),
        (
            "hook_tool_outcome",
            {
                "command": "pytest tests/checkout",
                "error": "Exit code 1\n== 1 failed, 4 passed in 0.3s ==",
                "event": "PostToolUseFailure",
            },
        ),
        ("hook_tool_outcome", {"command": "pytest tests/checkout", "output": "== 5 passed in 0.30s =="}),
        ("hook_tool_outcome", {"command": "pytest tests/checkout", "output": "== 5 passed in 0.31s =="}),
        ("hook_tool_outcome", {"command": "ls -la", "output": "total 0"}),
        ("hook_stop", {}),
        ("hook_stop", {}),
        ("hook_stop", {"stop_hook_active": "true"}),
        (
            "hook_file_read",
            {"file_path": "/plain/app.py", "session_id": "golden", "cwd": str(root / "plain")},
        ),
        ("hook_file_read", {"file_path": ""}),
        ("hook_session_event", {"event": "PreCompact", "session_id": "golden", "cwd": str(root / "plain")}),
        ("hook_session_event", {"event": "Restart"}),
        ("resolve_ghap", {"status": "falsified", "result": "still flaky"}),
        (
            "resolve_ghap",
            {
                "status": "falsified",
                "result": "still flaky after the new mock",
                "surprise": "the payment mock was never shared",
                "root_cause": {
                    "category": "misleading-symptom",
                    "description": "the clock in the test runner",
                },
                "lesson": {"what_worked": "freeze the clock in checkout tests"},
            },
        ),
        (
            "start_ghap",
            {
                "domain": "testing",
                "strategy": "trial-and-error",
                "goal": "fix the flaky checkout payment test again",
                "hypothesis": "the payment mock is shared between tests",
                "action": "add a fresh payment mock",
                "prediction": "the checkout tests pass",
            },
        ),
        (
            "start_ghap",
            {
                "domain": "debugging",
                "strategy": "read-the-error",
                "goal": "find why the nightly export stops",
                "hypothesis": "the export runs out of memory",
                "action": "watch the memory of the export job",
                "prediction": "memory grows until the kill",
            },
        ),
        (
            "resolve_ghap",
            {
                "status": "confirmed",
                "result": "it ran out of memory",
                "lesson": {"what_worked": "stream the rows", "takeaway": "never load a whole export"},
            },
        ),
        ("list_ghap_entries", {}),
        ("list_ghap_entries", {"outcome": "abandoned", "limit": 5}),
        ("list_ghap_entries", {"since": "yesterday"}),
        ("list_ghap_entries", {"limit": 0}),
        # search and context
        ("search_experiences", {"query": "flaky checkout test"}),
        ("search_experiences", {"query": "clock", "axis": "root_cause"}),
        ("search_experiences", {"query": "   "}),
        ("search_experiences", {"query": "x", "limit": 99}),
        ("assemble_context", {"query": "the checkout payment test is flaky"}),
        ("assemble_context", {"query": "staging database reset", "budget_tokens": 50, "min_score": 0.0}),
        ("assemble_context", {"query": "   "}),
        ("assemble_context", {"query": "x", "budget_tokens": 10}),
        ("get_premortem_warnings", {"goal": "fix the flaky checkout payment test"}),
        ("get_premortem_warnings", {"goal": " "}),
        (
            "expand_context",
            lambda seen: {
                "ids": [i["id"] for i in seen["assemble_context#1"]["items"]]
                + ["mem:00000000-0000-4000-8000-000000000000", "bogus"]
            },
        ),
        ("expand_context", {"ids": []}),
        ("hook_prompt_context", {"prompt": "the checkout payment test is flaky again, fix it"}),
        ("hook_prompt_context", {"prompt": "yes"}),
        ("hook_prompt_context", {"prompt": "/compact the whole conversation now"}),
        ("hook_prompt_context", {"prompt": "bake a loaf of sourdough bread at home"}),
        # loops
        ("initialize_refinement_loop", {"loop_type": "Plan"}),
        ("initialize_refinement_loop", {"loop_type": "poem"}),
        ("decide_loop_next_action", _score(1, 70)),
        ("decide_loop_next_action", _score(1, 72)),
        ("decide_loop_next_action", _score(1, 73)),
        ("decide_loop_next_action", _score(1, 99)),
        ("decide_loop_next_action", {"loop_id": "deadbeef", "current_score": 101}),
        ("decide_loop_next_action", {"loop_id": "deadbeef", "current_score": 50}),
        ("get_loop_status", lambda seen: {"loop_id": seen["initialize_refinement_loop#1"]["id"]}),
        ("initialize_refinement_loop", {"loop_type": "build_code"}),
        ("decide_loop_next_action", _score(3, 96)),
        ("list_active_loops", {}),
        # code (the edited file is in no indexed project yet: its re-index, queued, finds none)
        ("hook_file_changed", {"file_path": str(CODE_FIXTURES / "python.py")}),
        ("hook_file_changed", {"file_path": "relative/path.py"}),
        ("index_codebase", {"directory": str(CODE_FIXTURES), "project": "fixtures"}),
        # Searched once every vector is in: matches by meaning then do not depend on timing.
        (WAIT_FOR_VECTORS, {}),
        ("index_codebase", {"directory": str(CODE_FIXTURES), "project": "  "}),
        ("index_codebase", {"directory": str(root / "missing"), "project": "missing"}),
        ("search_code", {"query": "parse the configuration file"}),
        ("search_code", {"query": "class", "language": "python", "project": "fixtures", "limit": 3}),
        ("search_code", {"query": "  "}),
        ("find_similar_code", {"snippet": "def add(a, b):\n    return a + b\n", "limit": 2}),
        ("find_similar_code", {"snippet": ""}),
        ("list_indexed_projects", {}),
        ("delete_project_index", {"project": "fixtures"}),
        ("delete_project_index", {"project": "never-indexed"}),
        ("list_indexed_projects", {}),
        # git
        ("index_commits", {}),
        ("index_commits", {"since": "not a date"}),
        ("search_commits", {"query": "retry with backoff", "limit": 3}),
        ("search_commits", {"query": "logo", "author": "Bob Builder", "since": "2000-01-01"}),
        ("search_commits", {"query": " "}),
        ("get_file_history", {"path": "src/main.py"}),
        ("get_file_history", {"path": "docs/user guide.md", "limit": 1}),
        ("get_file_history", {"path": "  "}),
        ("get_churn_hotspots", {}),
        ("get_churn_hotspots", {"days": 30, "limit": 2}),
        ("get_code_authors", {"path": "src/main.py"}),
        ("get_code_authors", {"path": "../outside.py"}),
        # learning (after enough experiences, see below)
        ("get_clusters", {"axis": "strategy"}),
        ("list_values", {}),
        ("validate_value", {"text": "x", "cluster_id": "not a cluster"}),
    ]
    for start, resolve in _entries(24):
        calls += [("start_ghap", start), ("resolve_ghap", resolve)]
    calls += [
        ("get_clusters", {"axis": "full"}),
        ("get_clusters", {"axis": "root_cause"}),
        ("get_cluster_members", {"cluster_id": "cluster_full_0", "limit": 2}),
        ("get_cluster_members", {"cluster_id": "full_0", "limit": 0}),
        ("get_cluster_members", {"cluster_id": "cluster_full_99"}),
        ("validate_value", {"text": "Bake bread at 250 degrees", "cluster_id": "cluster_full_0"}),
        ("validate_value", lambda seen: {"text": _typical(seen), "cluster_id": "cluster_full_0"}),
        (
            "store_value",
            {"text": "Bake bread at 250 degrees", "cluster_id": "cluster_full_0", "axis": "full"},
        ),
        (
            "store_value",
            lambda seen: {"text": _typical(seen), "cluster_id": "cluster_full_0", "axis": "strategy"},
        ),
        (
            "store_value",
            lambda seen: {"text": _typical(seen), "cluster_id": "cluster_full_0", "axis": "full"},
        ),
        ("list_values", {}),
        ("list_values", {"axis": "surprise", "limit": 3}),
        ("list_values", {"limit": 1000}),
    ]
    del repo
    return calls


def _score(loop: int, score: int) -> Args:
    """decide_loop_next_action's arguments for the ``loop``-th loop initialised."""
    return lambda seen: {"loop_id": seen[f"initialize_refinement_loop#{loop}"]["id"], "current_score": score}


def _typical(seen: dict[str, Any]) -> str:
    member = seen["get_cluster_members#1"]["members"][0]
    return "\n".join(
        [
            f"Goal: {member['goal']}",
            f"Hypothesis: {member['hypothesis']}",
            f"Action: {member['action']}",
            f"Prediction: {member['prediction']}",
            f"Outcome: {member['outcome_status']}, {member['outcome_result']}",
        ]
    )[:500]


@dataclass
class Capture:
    """What a run of the script saw: each answer as kept (masked) and as received, and the output
    schema each tool lists."""

    mask: Masker
    answers: list[dict[str, Any]] = field(default_factory=list)
    received: list[tuple[str, CallToolResult]] = field(default_factory=list)
    output_schemas: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def record(
        self,
        label: str,
        tool: str,
        arguments: dict[str, Any],
        result: CallToolResult,
        shown: dict[str, Any] | None = None,
    ) -> None:
        """Keep ``result``; ``shown`` stands for ``arguments`` in the capture when given."""
        self.received.append((tool, result))
        text = "".join(getattr(block, "text", "") for block in result.content)
        structured = result.structured_content
        self.answers.append(
            {
                "call": label,
                "arguments": shown or json.loads(self.mask(json.dumps(arguments))),
                "is_error": bool(result.is_error),
                "text": self.mask(text),
                "structured": None
                if structured is None
                else json.loads(self.mask(json.dumps(structured, indent=1))),
            }
        )


def _payload(result: Any) -> Any:
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    text = "".join(getattr(block, "text", "") for block in result.content)
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _main_server(root: Path, seen_by: Capture) -> None:
    from learning_memory.composition import build_server

    build_repo(root / "repo")
    settings = inline_settings(root, "hashing:256", repo_path=root / "repo", hook_budget_s=10.0)
    seen: dict[str, Any] = {}
    counts: dict[str, int] = {}
    async with Client(build_server(settings)) as client:
        tools = (await client.list_tools()).tools
        seen_by.output_schemas = {t.name: t.output_schema for t in tools}
        # What a client learns of each tool before calling it (the output schema aside).
        listed = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
        ]
        seen_by.answers.append({"call": "tools/list", "tools": listed})
        for name, args in script(root):
            arguments = args(seen) if callable(args) else args
            if name == WAIT_FOR_VECTORS:
                await _wait_for_vectors(client)
                continue
            result = await client.call_tool(name, arguments)
            counts[name] = counts.get(name, 0) + 1
            label = f"{name}#{counts[name]}"
            seen[label] = _payload(result)
            if name == "initialize_refinement_loop" and not result.is_error:
                seen_by.mask.loop_ids.add(seen[label]["id"])
            seen_by.record(label, name, arguments, result)


async def _wait_for_vectors(client: Client) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = _payload(await client.call_tool("list_indexed_projects", {}))
        if not any(project["vectors_pending"] for project in listed["projects"]):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("the code index's vectors were not all in after 120 s")


async def _running_server(root: Path, seen_by: Capture) -> None:
    """A job that outlasts the wait budget: the "running" answer, then its status once done."""
    from learning_memory.composition import build_server

    settings = inline_settings(root / "slow", "hashing:256", tool_wait_s=0.2)
    async with Client(build_server(settings)) as client:
        result = await client.call_tool("ping", {"delay_ms": 1500})
        seen_by.record("ping (slow)", "ping", {"delay_ms": 1500}, result)
        job_id = _payload(result)["job_id"]
        deadline = time.monotonic() + 60
        while True:
            status = await client.call_tool("get_job_status", {"job_id": job_id})
            if _payload(status).get("state") == "complete" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        shown = {"job_id": "<job>"}
        seen_by.record("get_job_status (done)", "get_job_status", {"job_id": job_id}, status, shown)


def capture(root: Path) -> Capture:
    seen_by = Capture(Masker(root))

    async def both() -> None:
        await _main_server(root, seen_by)
        await _running_server(root, seen_by)

    asyncio.run(both())
    return seen_by


def dumps(answers: list[dict[str, Any]]) -> str:
    return json.dumps(answers, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    with tempfile.TemporaryDirectory() as folder:
        target.write_text(dumps(capture(Path(folder).resolve()).answers))
    print(f"wrote {target}", file=sys.stderr)
