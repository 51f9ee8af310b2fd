"""Real Claude Code (the pinned CLI in .tools/claude) with this repository's plugin, driven
headless by a scripted model: what the hooks put in front of the model, read from the requests
the model received, and how long each hook took, read from Claude Code's debug log.

Every session runs in a private Claude Code home and inherits this test's LMS_* environment, so
the MCP server and the hooks Claude Code starts share the test's Redis namespace, journal and
worker."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from redis.asyncio import Redis

from learning_memory.cli.client import result_payload
from learning_memory.cli.samples import demo_entries
from tests.conftest import WorkerFactory, wait_for_worker
from tests.e2e.conftest import stdio_client
from tests.helpers import stop_process, wait_for
from tests.support import REPO_ROOT
from tests.support.claude_code import ClaudeCodeMissing, ClaudeHome, Session, pinned_claude, tool
from tests.support.scripted_model import Request, Script, Turn, call, last_tool_result, say

try:
    CLAUDE = pinned_claude()
except ClaudeCodeMissing as missing:
    pytest.skip(f"{missing} (make test installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 120
EXPORT_STORY = {
    "start": {
        "domain": "debugging",
        "strategy": "check-assumptions",
        "goal": "find why the nightly CSV export job runs out of memory",
        "hypothesis": "the export loads every row into memory at once",
        "action": "stream the rows in batches of 1000",
        "prediction": "memory stays flat during the export",
    },
    "resolve": {
        "status": "falsified",
        "result": "memory still grew while streaming the export",
        "surprise": "an in-process cache kept every exported row alive",
        "root_cause": {
            "category": "wrong-assumption",
            "description": "assumed the row cache evicted entries",
        },
        "lesson": {"what_worked": "bound the row cache with an LRU of 10,000 entries"},
    },
}
ACTIVE = {
    "domain": "testing",
    "strategy": "systematic-elimination",
    "goal": "make the flaky parser tests pass reliably",
    "hypothesis": "the parser tests share a temporary folder between runs",
    "action": "give each test its own tmp_path",
    "prediction": "the tests pass after the fix",
}
RELATED_PROMPT = "The nightly CSV export job runs out of memory again; can you find out why?"
UNRELATED_PROMPT = "Write a haiku about autumn leaves falling on a quiet pond."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


async def _ok(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result_payload(result)


async def _live_worker(lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory) -> None:
    await wait_for_worker(redis, lms_env["LMS_NAMESPACE"], worker_factory().pid)


async def _seed_experience(lms_env: dict[str, str], story: dict[str, Any]) -> str:
    """Resolve one GHAP entry and wait until the worker has embedded it (searchable)."""
    async with stdio_client(lms_env) as client:
        started = await _ok(client, "start_ghap", **story["start"])
        await _ok(client, "resolve_ghap", **story["resolve"])

        async def searchable() -> bool:
            found = await _ok(client, "search_experiences", query=story["start"]["goal"], limit=3)
            return any(r["ghap_id"] == started["id"] for r in found["results"])

        await wait_for(searchable, timeout=120, what="the seeded experience to be searchable", interval=0.2)
    return str(started["id"])


async def _start_active(lms_env: dict[str, str]) -> str:
    async with stdio_client(lms_env) as client:
        return str((await _ok(client, "start_ghap", **ACTIVE))["id"])


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _active_entry(lms_env: dict[str, str]) -> dict[str, Any]:
    return json.loads((Path(lms_env["LMS_JOURNAL_DIR"]) / "active.json").read_text())  # type: ignore[no-any-return]


def _session(
    home: ClaudeHome, prompts: str | list[str], script: Script, env: dict[str, str], cwd: Path
) -> Session:
    session = home.run_session(prompts, script, env=env, cwd=cwd, timeout=SESSION_TIMEOUT_S)
    assert not session.timed_out, f"the session ran past {SESSION_TIMEOUT_S}s: {session.stderr[-2000:]}"
    assert session.returncode == 0, session.stderr[-2000:] or session.stdout[-2000:]
    assert session.script_errors == [], session.script_errors
    return session


def test_the_plugin_validates_installs_and_uninstalls(tmp_path: Path) -> None:
    home = ClaudeHome.create(tmp_path / "home", CLAUDE)
    for folder in (REPO_ROOT, REPO_ROOT / "plugin"):
        checked = home.run_claude("plugin", "validate", str(folder))
        assert checked.returncode == 0, checked.stdout + checked.stderr
    # The real CLI, as a user runs it from the checkout's venv (twice: the second run is a no-op).
    cli = [sys.executable, "-m", "learning_memory", "claude"]
    for _ in range(2):
        done = subprocess.run(
            [*cli, "install"], env=home.env(), capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
    assert "already installed" in done.stdout
    assert home.plugin_enabled()
    recorded = Path(home.env()["XDG_CONFIG_HOME"]) / "learning-memory" / "command"
    assert Path(recorded.read_text().strip()).name == "learning-memory"
    listed = home.run_claude("plugin", "list")
    assert "learning-memory@learning-memory" in listed.stdout and "enabled" in listed.stdout
    done = subprocess.run(
        [*cli, "uninstall"], env=home.env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert home.plugin_listing() == [] and not recorded.exists()


async def test_session_start_brief_brings_back_the_active_ghap(
    home: ClaudeHome, lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory, project: Path
) -> None:
    await _live_worker(lms_env, redis, worker_factory)
    await _start_active(lms_env)
    session = _session(home, "Where was I?", [say("Picking up the parser tests.")], lms_env, project)
    briefs = session.hook_contexts("SessionStart")
    assert briefs and ACTIVE["goal"] in briefs[0], session.everything_seen()[-3000:]
    assert ACTIVE["hypothesis"] in briefs[0]


async def test_prompt_context_for_a_related_prompt_and_none_for_an_unrelated_one(
    home: ClaudeHome, lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory, project: Path
) -> None:
    await _live_worker(lms_env, redis, worker_factory)
    seeded = await _seed_experience(lms_env, EXPORT_STORY)
    session = _session(
        home,
        [RELATED_PROMPT, UNRELATED_PROMPT],
        [say("Looking at the export."), say("Leaves drift down.")],
        lms_env,
        project,
    )
    assert len(session.results) == 2
    contexts = session.hook_contexts("UserPromptSubmit")
    assert len(contexts) == 1, contexts  # the unrelated prompt got nothing
    assert f"exp:{seeded}" in contexts[0] and "row cache" in contexts[0], contexts[0]
    # It was shown with the related prompt, before the unrelated one was asked.
    first_turn = session.main_requests()[0].body
    assert any("hook additional context" in t and contexts[0][:60] in t for t in session.texts(first_turn))


async def test_test_runs_become_evidence_the_outcome_reaches_the_model_and_stop_reminds_once(
    home: ClaudeHome, lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory, project: Path
) -> None:
    await _live_worker(lms_env, redis, worker_factory)
    await _start_active(lms_env)
    (project / "test_parser.py").write_text(
        "import os\n\ndef test_parses():\n    assert os.environ.get('PARSER_BROKEN') is None\n"
    )
    pytest_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider test_parser.py"
    script = [
        call("Bash", command=f"PARSER_BROKEN=1 {pytest_cmd}", description="run the tests"),
        call("Bash", command=pytest_cmd, description="run the tests again"),
        say("The tests pass now."),
    ]
    session = _session(home, "Fix the flaky parser tests.", script, lms_env, project)

    evidence = _active_entry(lms_env)["evidence"]
    assert [(e["kind"], e["passed"], e["tests_failed"], e["tests_passed"]) for e in evidence] == [
        ("test", False, 1, 0),
        ("test", True, 0, 1),
    ]
    assert all("pytest" in e["command"] for e in evidence)
    failed = session.hook_contexts("PostToolUseFailure:Bash")
    passed = session.hook_contexts("PostToolUse:Bash")
    assert failed and "1 failed" in failed[0], session.everything_seen()[-3000:]
    assert passed and "1 passed" in passed[0] and "resolve_ghap" in passed[0]
    assert len(session.stop_feedback()) == 1, session.stop_feedback()
    assert ACTIVE["goal"] in session.stop_feedback()[0]


async def test_with_no_worker_and_no_redis_every_hook_returns_at_once_and_adds_nothing(
    home: ClaudeHome,
    lms_env: dict[str, str],
    redis: Redis,
    worker_factory: WorkerFactory,
    project: Path,
) -> None:
    worker = worker_factory()
    await wait_for_worker(redis, lms_env["LMS_NAMESPACE"], worker.pid)
    await _seed_experience(lms_env, EXPORT_STORY)  # a prompt that would find it, with a worker
    stop_process(worker)
    env = {**lms_env, "LMS_REDIS_URL": f"redis://127.0.0.1:{_closed_port()}/0"}
    script = [
        call("Bash", command=f"{sys.executable} -m pytest --version", description="pytest version"),
        call("Write", file_path=str(project / "notes.py"), content="X = 1\n"),
        say("done."),
    ]
    session = _session(home, RELATED_PROMPT, script, env, project)

    # The SessionStart brief reads only the project's journal (local files), so it may speak;
    # everything that needs the worker or Redis must stay silent.
    for event in ("UserPromptSubmit", "PostToolUse:Bash", "PostToolUse:Write"):
        assert session.hook_contexts(event) == [], (event, session.hook_contexts(event))
    assert session.stop_feedback() == []
    timings = session.hook_timings()
    ran = {t.name if t.kind == "mcp_tool" else t.label for t in timings}
    assert {"hook_prompt_context", "hook_tool_outcome", "hook_file_changed", "hook_stop"} <= ran, timings
    assert any(t.label.startswith("SessionStart") for t in timings), timings
    slow = [t for t in timings if t.ms is None or t.ms >= 1000]
    assert slow == [], slow


async def test_the_ghap_skill_checks_warnings_and_context_then_starts_an_entry(
    home: ClaudeHome, lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory, project: Path
) -> None:
    await _live_worker(lms_env, redis, worker_factory)
    names = ",".join(tool(n) for n in ("get_premortem_warnings", "assemble_context", "start_ghap"))
    task = {"goal": ACTIVE["goal"], "hypothesis": ACTIVE["hypothesis"]}
    script = [
        call("ToolSearch", query=f"select:{names}", max_results=3),
        call(tool("get_premortem_warnings"), **task),
        call(tool("assemble_context"), query=ACTIVE["goal"]),
        call(tool("start_ghap"), **ACTIVE),
        say("Tracking it."),
    ]
    session = _session(home, "/ghap make the flaky parser tests pass", script, lms_env, project)
    assert any(
        "Quick GHAP start" in text and "make the flaky parser tests pass" in text for text in session.texts()
    )
    results = session.tool_results()
    assert json.loads(results[1])["warnings"] == []
    assert "items" in json.loads(results[2])
    assert _active_entry(lms_env)["goal"] == ACTIVE["goal"]


def test_the_memory_skill_says_where_the_view_is(
    home: ClaudeHome, lms_env: dict[str, str], project: Path
) -> None:
    # Its first line is the launcher's answer, run by Claude Code as the skill is rendered.
    port = _closed_port()

    def answer() -> Generator[Turn, Request, None]:
        yield say("Start it with the command above.")

    # Claude Code's own /memory edits CLAUDE.md: the plugin's skill is reached by its full name.
    session = _session(
        home, "/learning-memory:memory", answer(), {**lms_env, "LMS_UI_PORT": str(port)}, project
    )
    said = "\n".join(session.texts())
    assert "The memory view is not running" in said, said[-2000:]
    assert f"learning-memory ui --port {port}" in said


async def test_the_retro_skill_stores_a_value_that_validates(
    home: ClaudeHome, lms_env: dict[str, str], redis: Redis, worker_factory: WorkerFactory, project: Path
) -> None:
    await _live_worker(lms_env, redis, worker_factory)
    samples = demo_entries()
    async with stdio_client(lms_env) as client:
        for sample in samples:
            await _ok(client, "start_ghap", **sample.start)
            await _ok(client, "resolve_ghap", **sample.resolve)

        async def all_persisted() -> bool:
            answer = await client.call_tool("get_clusters", {"axis": "full"})
            return not answer.is_error and result_payload(answer)["experience_count"] == len(samples)

        await wait_for(all_persisted, timeout=180, what="every seeded experience clustered", interval=0.5)

    parts = ("goal", "hypothesis", "action", "prediction")

    def retro() -> Generator[Turn, Request, None]:
        names = ",".join(
            tool(n) for n in ("get_clusters", "get_cluster_members", "validate_value", "store_value")
        )
        request = yield call("ToolSearch", query=f"select:{names}", max_results=4)
        request = yield call(tool("get_clusters"), axis="full")
        for cluster in json.loads(last_tool_result(request))["clusters"]:
            request = yield call(tool("get_cluster_members"), cluster_id=cluster["cluster_id"], limit=3)
            for typical in json.loads(last_tool_result(request))["members"]:
                # In the cluster's own words: the threshold is strict, an abstract lesson fails.
                text = "\n".join(f"{part.capitalize()}: {typical[part]}" for part in parts)
                request = yield call(tool("validate_value"), text=text, cluster_id=cluster["cluster_id"])
                if json.loads(last_tool_result(request))["valid"]:
                    yield call(tool("store_value"), text=text, cluster_id=cluster["cluster_id"], axis="full")
                    yield say("Stored one value.")
                    return
        yield say("No value validated.")

    session = _session(home, "/retro", retro(), lms_env, project)
    assert any("Retrospective: from experiences to values" in text for text in session.texts())
    assert session.result["result"] == "Stored one value.", session.tool_results()[-3:]
    assert json.loads(session.tool_results()[-1])["cluster_size"] >= 5
    async with stdio_client(lms_env) as client:
        assert (await _ok(client, "list_values"))["count"] == 1
