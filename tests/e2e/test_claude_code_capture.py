"""Capture through real Claude Code: a failure fixed in one worktree of a repository is answered
with its fix when a session in another worktree meets it again; nobody called a GHAP tool. A
memory that names a file of the repository comes back when a session reads that file.

The pinned CLI runs headless against a scripted model with this repository's plugin installed;
what the model was shown is read from the requests it received."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.conftest import WorkerFactory, wait_for_worker
from tests.git_repo import CART_FIXED, shop_worktrees
from tests.helpers import wait_for
from tests.support.claude_code import ClaudeCodeMissing, ClaudeHome, Session, pinned_claude, tool
from tests.support.scripted_model import Script, call, say

try:
    CLAUDE = pinned_claude()
except ClaudeCodeMissing as missing:
    pytest.skip(f"{missing} (make test installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 120
MEMORY = "Cart totals come from total() in cart.py; prices are in cents, never floats."


@pytest.fixture
async def worktrees(
    tmp_path: Path, redis: Redis, lms_env: dict[str, str], worker_factory: WorkerFactory
) -> tuple[Path, Path]:
    """Two worktrees of one repository, with a live worker to mine what the sessions do."""
    await wait_for_worker(redis, lms_env["LMS_NAMESPACE"], worker_factory().pid)
    return shop_worktrees(tmp_path)


def _session(home: ClaudeHome, prompt: str, script: Script, env: dict[str, str], cwd: Path) -> Session:
    session = home.run_session(prompt, script, env=env, cwd=cwd, timeout=SESSION_TIMEOUT_S)
    assert not session.timed_out, f"the session ran past {SESSION_TIMEOUT_S}s: {session.stderr[-2000:]}"
    assert session.returncode == 0, session.stderr[-2000:] or session.stdout[-2000:]
    assert session.script_errors == [], session.script_errors
    return session


def _fixes(index: Path) -> list[tuple[str, str]]:
    if not index.exists():
        return []
    with sqlite3.connect(index) as db:
        return [(str(row[0]), str(row[1])) for row in db.execute("SELECT signature, files FROM fixes")]


async def test_a_failure_fixed_in_one_worktree_is_answered_with_its_fix_in_another(
    home: ClaudeHome, lms_env: dict[str, str], worktrees: tuple[Path, Path]
) -> None:
    first, second = worktrees
    pytest_cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider test_cart.py"
    fixing: Script = [
        call("Bash", command=pytest_cmd, description="run the tests"),
        call("Read", file_path=str(first / "cart.py")),
        call(
            "Edit", file_path=str(first / "cart.py"), old_string="sum(prices) - 1", new_string="sum(prices)"
        ),
        call("Bash", command=pytest_cmd, description="run the tests again"),
        call("Bash", command="git commit -qam 'Fix the cart total off by one'", description="commit"),
        say("Fixed: the total no longer subtracts one."),
    ]
    _session(home, "The cart total is wrong, please fix it.", fixing, lms_env, first)
    assert (first / "cart.py").read_text() == CART_FIXED

    index = Path(lms_env["LMS_DATA_DIR"]) / "capture" / "fixes.sqlite3"

    async def mined() -> list[tuple[str, str]]:
        return _fixes(index)

    await wait_for(mined, timeout=120, what="the first session's fix to be mined", interval=0.2)

    meeting_again: Script = [
        call("Bash", command=pytest_cmd, description="run the tests"),
        say("The test fails."),
    ]
    session = _session(home, "Run the cart tests.", meeting_again, lms_env, second)
    hints = session.hook_contexts("PostToolUseFailure:Bash")
    assert hints, session.everything_seen()[-3000:]
    assert "seen before" in hints[0] and "cart.py" in hints[0] and "total" in hints[0], hints
    assert "Fix the cart total off by one" in hints[0]
    assert "worktree shop" in hints[0]
    # The hint reached the model in its next request, right after the failing run's result.
    assert any(hints[0][:80] in text for text in session.texts(session.main_requests()[-1].body))


async def test_a_memory_naming_a_file_comes_back_when_another_worktree_reads_it(
    home: ClaudeHome, lms_env: dict[str, str], worktrees: tuple[Path, Path]
) -> None:
    first, second = worktrees
    remembering: Script = [
        call("ToolSearch", query=f"select:{tool('store_memory')}", max_results=1),
        call(tool("store_memory"), content=MEMORY, category="fact"),
        say("Noted."),
    ]
    _session(home, "Remember how cart totals work.", remembering, lms_env, first)

    reading: Script = [call("Read", file_path=str(second / "cart.py")), say("Read it.")]
    session = _session(home, "Look at the cart.", reading, lms_env, second)
    lessons = session.hook_contexts("PostToolUse:Read")
    assert lessons, session.everything_seen()[-3000:]
    assert "memory (about total)" in lessons[0] and "prices are in cents" in lessons[0], lessons
    assert any(lessons[0][:60] in text for text in session.texts(session.main_requests()[-1].body))
