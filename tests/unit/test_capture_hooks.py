"""Capture through the plugin's hook tools, in-process (inline mode): a real pytest failure fixed
and committed in one worktree is mined, and the same failure in another worktree of the
repository is answered with the fix; a failure never met gets nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import learning_memory.server.hooks.tools as hook_tools
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from tests.git_repo import CART_FIXED, git, shop_worktrees
from tests.helpers import pids_of
from tests.mcp_thread import ThreadedClient, inline_client, ok

OTHER_TEST = "def test_name():\n    assert 'ann'.title() == 'Anne'\n"
PATCH = [
    {
        "oldStart": 1,
        "oldLines": 2,
        "newStart": 1,
        "newLines": 2,
        "lines": [" def total(prices):", "-    return sum(prices) - 1", "+    return sum(prices)"],
    }
]


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path, "hashing:256") as client:
        yield client


@pytest.fixture
def worktrees(tmp_path: Path) -> tuple[Path, Path]:
    return shop_worktrees(tmp_path)


def pytest_run(folder: Path, target: str = "test_cart.py") -> tuple[str, dict[str, str]]:
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider {target}"
    done = subprocess.run(command.split(), cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode:
        return command, {
            "error": f"Exit code {done.returncode}\n{done.stdout}{done.stderr}",
            "event": "PostToolUseFailure",
        }
    return command, {"output": done.stdout, "stderr": done.stderr}


def hook(mcp: ThreadedClient, tool: str, **arguments: Any) -> str:
    result = mcp.call(tool, arguments)
    assert not result.is_error, result.content
    text = "".join(getattr(block, "text", "") for block in result.content)
    return str(json.loads(text)["hookSpecificOutput"]["additionalContext"]) if text else ""


def run_hook(
    mcp: ThreadedClient, session: str, folder: Path, call_id: str, target: str = "test_cart.py"
) -> str:
    command, outcome = pytest_run(folder, target)
    return hook(
        mcp,
        "hook_tool_outcome",
        command=command,
        session_id=session,
        cwd=str(folder),
        tool_use_id=call_id,
        **outcome,
    )


def wait_until(condition: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def test_a_fix_in_one_worktree_answers_the_same_failure_in_another(
    mcp: ThreadedClient, worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = worktrees
    hook(
        mcp,
        "hook_prompt_context",
        prompt="The cart total is wrong, please fix it.",
        session_id="s1",
        cwd=str(first),
    )
    assert run_hook(mcp, "s1", first, "t1") == ""  # met for the first time: nothing to say
    (first / "cart.py").write_text(CART_FIXED)
    edit = hook(
        mcp,
        "hook_file_changed",
        file_path=str(first / "cart.py"),
        patch=json.dumps(PATCH),
        session_id="s1",
        cwd=str(first),
        tool_use_id="t2",
    )
    assert edit == ""
    assert run_hook(mcp, "s1", first, "t3") == ""
    git(first, "commit", "-qam", "Fix the cart total off by one")
    hook(
        mcp,
        "hook_tool_outcome",
        command="git commit -qam 'Fix the cart total off by one'",
        output="",
        session_id="s1",
        cwd=str(first),
        tool_use_id="t4",
    )
    hook(mcp, "hook_stop", session_id="s1", cwd=str(first))

    index = FixIndex(fix_index_path(tmp_path / "data"))
    project = json.loads(
        next((tmp_path / "data" / "capture").glob("*/sessions/s1.jsonl")).read_text().splitlines()[0]
    )["project"]
    wait_until(lambda: index.fixes_for_file(project, "cart.py"), "the first session to be mined")

    from learning_memory.server.hooks.session_brief import brief

    text = wait_until(lambda: brief(second, tmp_path / "data"), "the brief to carry the captured fix")
    assert "Failures fixed lately in this repository" in text and "test_cart.py::test_total" in text, text
    assert '"Fix the cart total off by one"' in text and "[exp:" in text, text

    hint = run_hook(mcp, "s2", second, "u1")
    assert hint.startswith("Learning memory: seen before"), hint
    assert "test_cart.py::test_total" in hint and "cart.py (total)" in hint, hint
    assert "in worktree shop:" in hint and '"Fix the cart total off by one"' in hint, hint
    assert 'expand_context(["exp:' in hint

    lessons = hook(mcp, "hook_file_read", file_path=str(second / "cart.py"), session_id="s2", cwd=str(second))
    assert "cart.py" in lessons and "test_total" in lessons, lessons
    assert (
        hook(mcp, "hook_file_read", file_path=str(second / "cart.py"), session_id="s2", cwd=str(second)) == ""
    )

    (second / "test_name.py").write_text(OTHER_TEST)
    assert run_hook(mcp, "s2", second, "u2", "test_name.py") == ""  # never met: nothing

    found = ok(mcp, "search_experiences", query="cart total test_total AssertionError", limit=5)["results"]
    auto = [hit for hit in found if hit["source"] == "auto"]
    assert auto and auto[0]["outcome_status"] == "confirmed" and auto[0]["confidence_tier"] == "auto"
    assert any(anchor["file"] == "cart.py" for anchor in auto[0]["anchors"])


def test_without_a_session_nothing_is_recorded(
    mcp: ThreadedClient, worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    first, _ = worktrees
    assert run_hook(mcp, "", first, "t1") == ""
    hook(mcp, "hook_session_event", event="SessionEnd", session_id="", cwd=str(first))
    assert not (tmp_path / "data" / "capture").exists()


def test_capture_can_be_turned_off(tmp_path: Path, worktrees: tuple[Path, Path]) -> None:
    first, _ = worktrees
    with inline_client(tmp_path, "hashing:256", capture=False) as client:
        assert run_hook(client, "s1", first, "t1") == ""
        hook(client, "hook_stop", session_id="s1", cwd=str(first))
    assert not (tmp_path / "data" / "capture").exists()


def _log_a_fix(recorder_root: Path, folder: Path) -> Path:
    """A session log in which test_cart.py went red, cart.py was edited, and it went green."""
    from learning_memory.server.capture.recorder import Recorder
    from learning_memory.shared import runs

    recorder = Recorder(recorder_root, recorder_root / "fixes.sqlite3")
    recorder.prompt("s9", str(folder), "The cart total is wrong, please fix it.")
    for call_id, content in (("t1", None), ("t3", CART_FIXED)):
        if content is not None:
            (folder / "cart.py").write_text(content)
            recorder.edit("s9", str(folder), "t2", str(folder / "cart.py"), json.dumps(PATCH))
        command, outcome = pytest_run(folder)
        text = outcome.get("error") or outcome.get("output", "")
        code = 1 if "error" in outcome else 0
        recorder.run(
            "s9",
            str(folder),
            call_id,
            command,
            runs.read_run(command, text, code, worktree=str(folder)),
            None,
        )
    place = recorder.place(str(folder))
    assert place is not None
    return recorder.log.path(place.project, "s9")


def test_session_end_records_the_end_and_the_mine_command_learns_from_the_log(
    tmp_path: Path, worktrees: tuple[Path, Path]
) -> None:
    from learning_memory.server.capture.session_end import record_end

    first, _ = worktrees
    data = tmp_path / "data"
    log = _log_a_fix(data / "capture", first)
    assert record_end({"session_id": "s9", "cwd": str(first)}, data) == log
    assert json.loads(log.read_text().splitlines()[-1])["type"] == "end"
    assert record_end({"session_id": "never-seen", "cwd": str(first)}, data) is None
    assert record_end({"cwd": str(first)}, data) is None

    env = {
        **os.environ,
        "LMS_QUEUE": "inline",
        "LMS_DATA_DIR": str(data),
        "LMS_EMBEDDING_MODEL": "hashing:256",
    }
    command = [sys.executable, "-m", "learning_memory", "mine", str(log)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"episodes": 1, "stored": 1, "merged": 0, "absorbed": 0}
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert json.loads(again.stdout)["stored"] == 0  # mined once
    bad = subprocess.run(
        [*command[:-1], str(tmp_path)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert bad.returncode == 1 and "not a session log" in bad.stderr


def test_mining_with_redis_but_no_worker_leaves_the_job_queued(
    tmp_path: Path, worktrees: tuple[Path, Path], lms_env: dict[str, str]
) -> None:
    """What the SessionEnd hook starts must not start a worker that would idle for minutes."""
    first, _ = worktrees
    log = _log_a_fix(Path(lms_env["LMS_DATA_DIR"]) / "capture", first)
    command = [sys.executable, "-m", "learning_memory", "mine", str(log)]
    env = {**lms_env, "LMS_EMBEDDING_MODEL": "hashing:256"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "queued" in json.loads(done.stdout)
    assert pids_of("learning_memory worker", f"LMS_NAMESPACE={lms_env['LMS_NAMESPACE']}") == []


def test_a_prompt_after_a_prompt_asks_for_no_mining(
    mcp: ThreadedClient, worktrees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = worktrees
    asked: list[str] = []
    from learning_memory.server.capture.mining import mine_soon as real

    async def counting(app: Any, session_id: str, where: Any) -> bool:
        asked.append(session_id)
        return await real(app, session_id, where)

    monkeypatch.setattr(hook_tools, "mine_soon", counting)

    def prompt(text: str) -> None:
        hook(mcp, "hook_prompt_context", prompt=text, session_id="s1", cwd=str(first))

    prompt("The cart total is wrong, please fix it.")
    assert asked == ["s1"]  # a session this server has not mined yet
    prompt("Also look at the rounding, please.")
    assert asked == ["s1"]  # only a prompt since: nothing to settle
    run_hook(mcp, "s1", first, "t1")
    prompt("Now the tests fail; what next?")
    assert asked == ["s1", "s1"]  # a run since: mined
