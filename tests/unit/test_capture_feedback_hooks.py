"""Outcome feedback through the plugin's hook tools, in-process (inline mode): a fix hint shown in
a later session is logged; when that session's episode goes green the experience has helped once,
when another session stays red after it, it has not helped once; search_experiences shows both."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from learning_memory.shared.fix_feedback import Outcomes, feedback_factor
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from tests.git_repo import CART_BROKEN, CART_FIXED, git
from tests.mcp_thread import ThreadedClient, ok
from tests.unit.test_capture_hooks import PATCH, hook, mcp, run_hook, wait_until, worktrees

__all__ = ["mcp", "worktrees"]  # the fixtures, shared with the capture hooks' tests
_SHOWN = re.compile(r'expand_context\(\["(exp:[0-9a-f-]+)"\]\)')


def edit(mcp: ThreadedClient, session: str, folder: Path, call_id: str, content: str) -> None:
    (folder / "cart.py").write_text(content)
    hook(
        mcp,
        "hook_file_changed",
        file_path=str(folder / "cart.py"),
        patch=json.dumps(PATCH),
        session_id=session,
        cwd=str(folder),
        tool_use_id=call_id,
    )


def log_events(data: Path, session: str) -> list[dict[str, Any]]:
    log = next((data / "capture").glob(f"*/sessions/{session}.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_fix_hint_that_helped_and_one_that_did_not(
    mcp: ThreadedClient, worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = worktrees
    data = tmp_path / "data"
    index = FixIndex(fix_index_path(data))
    run_hook(mcp, "s1", first, "t1")
    edit(mcp, "s1", first, "t2", CART_FIXED)
    run_hook(mcp, "s1", first, "t3")
    git(first, "commit", "-qam", "Fix the cart total off by one")
    hook(mcp, "hook_stop", session_id="s1", cwd=str(first))
    project = log_events(data, "s1")[0]["project"]
    wait_until(lambda: index.fixes_for_file(project, "cart.py"), "the first session to be mined")

    # Session 2: the hint is shown, the same fix is made, the run goes green.
    hint = run_hook(mcp, "s2", second, "u1")
    shown = _SHOWN.search(hint)
    assert shown, hint
    item = shown.group(1)
    [injected] = [e for e in log_events(data, "s2") if e["type"] == "injected"]
    assert injected["items"] == [item] and injected["via"] == "fix_hint"
    edit(mcp, "s2", second, "u2", CART_FIXED)
    assert run_hook(mcp, "s2", second, "u3") == ""
    hook(mcp, "hook_stop", session_id="s2", cwd=str(second))
    wait_until(lambda: index.outcomes([item]) == {item: Outcomes(1, 0)}, "the hint to have helped")

    # Session 3: the hint is shown again, an edit that fixes nothing, still red at the end.
    edit(mcp, "s3", second, "v0", CART_BROKEN)
    assert _SHOWN.search(run_hook(mcp, "s3", second, "v1"))
    edit(mcp, "s3", second, "v2", CART_BROKEN.replace("- 1", "- 2"))
    run_hook(mcp, "s3", second, "v3")
    hook(mcp, "hook_session_event", event="SessionEnd", session_id="s3", cwd=str(second))
    wait_until(lambda: index.outcomes([item]) == {item: Outcomes(1, 1)}, "the hint not to have helped")

    query = "cart total test_total AssertionError"

    def both() -> tuple[dict[str, Any], dict[str, Any]] | None:
        found = ok(mcp, "search_experiences", query=query, limit=10)["results"]
        [hit] = [h for h in found if f"exp:{h['ghap_id']}" == item]
        items = ok(mcp, "assemble_context", query=query, min_score=0.0, budget_tokens=4_000)["items"]
        [shown_again] = [i for i in items if i["id"] == item]
        # Both rank it by its relevance, weighed as an auto experience, times the factor; asked
        # again while the last session's mining still adds to the store between the two.
        return (hit, shown_again) if abs(shown_again["score"] - hit["score"]) <= 1e-4 else None

    hit, shown_again = wait_until(both, "the two searches to score the hint alike")
    assert (hit["helped"], hit["not_helped"]) == (1, 1)
    assert (shown_again["helped"], shown_again["not_helped"]) == (1, 1)
    assert feedback_factor(Outcomes(1, 1)) < 1.0


def test_file_lessons_are_logged_once_with_their_ids(
    mcp: ThreadedClient, worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = worktrees
    data = tmp_path / "data"
    index = FixIndex(fix_index_path(data))
    run_hook(mcp, "s1", first, "t1")
    edit(mcp, "s1", first, "t2", CART_FIXED)
    run_hook(mcp, "s1", first, "t3")
    hook(mcp, "hook_stop", session_id="s1", cwd=str(first))
    project = log_events(data, "s1")[0]["project"]
    [fix] = wait_until(lambda: index.fixes_for_file(project, "cart.py"), "the first session to be mined")
    for _ in range(2):
        hook(mcp, "hook_file_read", file_path=str(second / "cart.py"), session_id="s2", cwd=str(second))
    injected = [e for e in log_events(data, "s2") if e["type"] == "injected"]
    assert [(e["via"], e["items"]) for e in injected] == [("file_lesson", [f"exp:{fix.experience_id}"])]
