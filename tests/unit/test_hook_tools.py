"""The tools the Claude Code plugin's hooks call, through an MCP client in-process (inline mode,
hashing embedder), and how they fail open when the queue has no worker or no Redis."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.context_lines import estimate_tokens
from tests.conftest import REDIS_URL
from tests.mcp_thread import ThreadedClient, inline_client, ok

FLAKY = {
    "domain": "testing",
    "strategy": "check-assumptions",
    "goal": "fix the flaky checkout payment test",
    "hypothesis": "the payment mock is shared between tests",
    "action": "give every test its own payment mock",
    "prediction": "the checkout tests pass ten runs in a row",
}
PYTEST_FAIL = "Exit code 1\n====== 1 failed, 4 passed in 0.31s ======"
PYTEST_PASS = "..... [100%]\n====== 5 passed in 0.30s ======"


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path, "hashing:256") as client:
        yield client


def hook(mcp: ThreadedClient, tool: str, **arguments: Any) -> str:
    result = mcp.call(tool, arguments)
    assert not result.is_error, result.content
    return "".join(getattr(block, "text", "") for block in result.content)


def context_of(answer: str, event: str) -> str:
    output = json.loads(answer)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    return str(output["additionalContext"])


def test_prompt_context_for_a_related_prompt_and_nothing_for_others(mcp: ThreadedClient) -> None:
    ok(mcp, "start_ghap", **FLAKY)
    ghap_id = ok(
        mcp,
        "resolve_ghap",
        status="confirmed",
        result="the checkout tests passed fifty runs",
        lesson={"what_worked": "a fresh payment mock per test", "takeaway": "never share payment mocks"},
    )["id"]
    related = hook(mcp, "hook_prompt_context", prompt="the checkout payment test is flaky again, fix it")
    context = context_of(related, "UserPromptSubmit")
    assert context.startswith("Learning memory:") and f"[exp:{ghap_id}]" in context
    assert "never share payment mocks" in context
    assert estimate_tokens(context) <= 300

    assert hook(mcp, "hook_prompt_context", prompt="write a haiku about autumn leaves") == ""
    assert hook(mcp, "hook_prompt_context", prompt="yes") == ""  # a reply, not a task
    assert hook(mcp, "hook_prompt_context", prompt="/retro checkout payment flaky test") == ""


def test_a_test_run_is_evidence_on_the_active_entry(mcp: ThreadedClient, tmp_path: Path) -> None:
    run = {"command": "cd app && .venv/bin/python -m pytest tests/test_checkout.py"}
    # No journal yet in this project: nothing is recorded, nothing is created.
    assert hook(mcp, "hook_tool_outcome", **run, output=PYTEST_PASS) == ""
    assert not (tmp_path / "journal").exists()

    ok(mcp, "start_ghap", **FLAKY)
    failing = hook(mcp, "hook_tool_outcome", **run, error=PYTEST_FAIL, event="PostToolUseFailure")
    line = context_of(failing, "PostToolUseFailure")
    assert "pytest: 4 passed, 1 failed (exit 1)" in line and "resolve_ghap" in line
    passing = hook(mcp, "hook_tool_outcome", **run, output=PYTEST_PASS)
    line = context_of(passing, "PostToolUse")
    assert "pytest: 5 passed" in line and 'resolve_ghap(status="confirmed"' in line
    # The same outcome again says nothing new.
    assert hook(mcp, "hook_tool_outcome", **run, output=PYTEST_PASS) == ""
    assert hook(mcp, "hook_tool_outcome", command="ls -la", output="total 0") == ""

    active = json.loads((tmp_path / "journal" / "active.json").read_text())
    assert [(e["passed"], e["tests_failed"]) for e in active["evidence"]] == [
        (False, 1),
        (True, 0),
        (True, 0),
    ]
    ghap_id = ok(mcp, "resolve_ghap", status="confirmed", result="green ten times")["id"]
    [stored] = ok(mcp, "expand_context", ids=[f"exp:{ghap_id}"])["items"]
    assert [e["summary"] for e in stored["record"]["evidence"]][-1] == "pytest: 5 passed, 0 failed"


def test_a_prediction_about_something_else_is_not_interrupted(mcp: ThreadedClient) -> None:
    ok(mcp, "start_ghap", **{**FLAKY, "prediction": "the latency drops under 20 ms"})
    assert hook(mcp, "hook_tool_outcome", command="pytest -q", output=PYTEST_PASS) == ""


def test_the_stop_reminder_comes_once_per_entry(mcp: ThreadedClient) -> None:
    assert hook(mcp, "hook_stop", stop_hook_active="false") == ""
    ok(mcp, "start_ghap", **FLAKY)
    reminder = json.loads(hook(mcp, "hook_stop", stop_hook_active="false"))
    assert reminder["decision"] == "block" and "still active" in reminder["reason"]
    assert hook(mcp, "hook_stop", stop_hook_active="false") == ""
    ok(mcp, "start_ghap", **{**FLAKY, "goal": "another goal"})
    assert hook(mcp, "hook_stop", stop_hook_active="true") == ""  # never twice in a row
    assert json.loads(hook(mcp, "hook_stop", stop_hook_active="false"))["decision"] == "block"


def test_an_edited_file_is_reindexed_in_the_background(mcp: ThreadedClient, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    source = project / "billing.py"
    source.write_text("def compute_invoice_total(lines):\n    return sum(lines)\n")
    ok(mcp, "index_codebase", directory=str(project), project="proj")
    source.write_text(source.read_text() + "\n\ndef refund_partial_payment(amount):\n    return -amount\n")
    assert hook(mcp, "hook_file_changed", file_path=str(source)) == ""
    assert hook(mcp, "hook_file_changed", file_path="relative/path.py") == ""
    assert hook(mcp, "hook_file_changed", file_path=str(tmp_path / "elsewhere.py")) == ""

    deadline = time.monotonic() + 30
    while True:
        names = [hit["name"] for hit in ok(mcp, "search_code", query="refund partial payment")["results"]]
        if "refund_partial_payment" in names:
            break
        assert time.monotonic() < deadline, "the edited file was not re-indexed"
        time.sleep(0.05)


@pytest.mark.redis
def test_with_no_worker_or_no_redis_every_hook_answers_nothing_at_once(
    tmp_path: Path, namespace: str
) -> None:
    ok_calls = {
        "hook_prompt_context": {"prompt": "the checkout payment test is flaky again"},
        "hook_file_changed": {"file_path": str(tmp_path / "a.py")},
    }
    for redis_url in (REDIS_URL, "redis://127.0.0.1:1/0"):  # a Redis with no worker; no Redis at all
        with inline_client(
            tmp_path, queue="arq", redis_url=redis_url, namespace=namespace, autostart_worker=False
        ) as mcp:
            for tool, arguments in ok_calls.items():
                started = time.monotonic()
                assert hook(mcp, tool, **arguments) == ""
                assert time.monotonic() - started < 1.0
            started = ok(mcp, "start_ghap", **FLAKY)
            assert started["warnings"] == []


@pytest.fixture
def silent_redis() -> Iterator[str]:
    """A Redis address that accepts connections and never answers (a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        stop.set()
        thread.join(5)
        for conn in [*held, listener]:
            conn.close()


def test_after_the_queue_failed_to_answer_hooks_stay_quiet_for_a_while(
    tmp_path: Path, silent_redis: str
) -> None:
    with inline_client(tmp_path, queue="arq", redis_url=silent_redis, autostart_worker=False) as mcp:
        prompt = {"prompt": "the checkout payment test is flaky again"}
        started = time.monotonic()
        assert hook(mcp, "hook_prompt_context", **prompt) == ""
        # The budget (0.8 s) is paid once, not for the worker check and again for the work: under
        # twice it, whatever else a loaded machine adds to the first call.
        assert time.monotonic() - started < 1.6
        started = time.monotonic()
        for _ in range(5):
            assert hook(mcp, "hook_prompt_context", **prompt) == ""
            assert hook(mcp, "hook_file_changed", file_path=str(tmp_path / "a.py")) == ""
        assert time.monotonic() - started < 0.5  # then nothing waits on the queue


def test_a_hook_answer_is_the_hook_output_the_session_start_command_writes_too() -> None:
    from learning_memory.server.hooks.answer import hook_answer
    from learning_memory.server.hooks.hook_output import NOTHING, HookAnswer
    from learning_memory.server.tool_registry import as_result

    answer = as_result(HookAnswer.context("UserPromptSubmit", "Learning memory: — a line"))
    assert answer.content[0].text == hook_answer("UserPromptSubmit", "Learning memory: — a line")  # type: ignore[union-attr]
    assert answer.structured_content == json.loads(answer.content[0].text)  # type: ignore[union-attr]
    nothing = as_result(NOTHING)
    assert (nothing.content[0].text, nothing.structured_content) == ("", {})  # type: ignore[union-attr]
