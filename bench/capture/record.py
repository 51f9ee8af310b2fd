"""Record real Claude Code sessions for ``python -m bench capture``: the pinned CLI, driven
headless by a scripted model, works on a small project of its own (``record_project``) in three
worktrees, and each session's transcript is copied out, in order.

    python -m bench.capture.record OUT_DIR

The sessions (one model for all, so tool_use ids never repeat across them):

1. worktree a: a cart test fails, the agent reads and fixes ``shop/cart.py``, reruns, commits;
2. worktree b (branch made before the fix): the same failure, the same edit, green;
3. worktree c: a discount test fails, the first edit fixes only half of it, the second all;
4. worktree c: ``mypy --strict`` rejects ``shop/tax.py``, an edit makes it pass;
5. worktree c: an inventory test fails, an edit does not fix it, the session ends red;
6. worktree a: reading and green runs only;
7. worktree c: the rates test times out, a plain rerun passes (flaky: nothing to learn).

No plugin is installed: the transcripts are the agent's work alone, and the bench replays the
hooks. A user hook on every event the bench replays logs the input Claude Code really gave it;
each session's log is kept as ``OUT_DIR/hook-inputs/NAME.jsonl`` (not a transcript: the bench
reads a folder's own ``*.jsonl`` only), for tests to hold the transcript reader to. Each
session is checked (its runs went red and green as meant) before it is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.capture import record_project as project
from bench.capture.transcripts import read_transcript
from tests.support.claude_code import ClaudeHome
from tests.support.scripted_model import Script, ScriptedModel, Turn, call, say

SESSION_TIMEOUT_S = 180
HOOK_EVENTS = ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "PreCompact", "SessionEnd")
HOOK_LOG_ENV = "LMS_RECORD_HOOK_LOG"
# One JSON line per hook input; the log's path comes from the environment, so that no path of
# this machine is written into the hook's command (Claude Code records commands in transcripts).
_LOG_HOOK = (
    "python3 -c 'import json, os, sys; "
    f'open(os.environ["{HOOK_LOG_ENV}"], "a").write(json.dumps(json.load(sys.stdin)) + "\\n")\''
)
PYTEST = "python -m pytest -q -p no:cacheprovider"


@dataclass(frozen=True)
class Plan:
    name: str
    worktree: str  # a, b or c
    prompt: str
    script: Script
    outcomes: str  # Bash results in order: "r" failed, "g" passed


def _edit(tree: Path, file: str, old: str, new: str, text: str = "") -> Turn:
    turn = call("Edit", file_path=str(tree / file), old_string=old, new_string=new)
    return Turn(text=text, tools=turn.tools)


def _bash(command: str, description: str, text: str = "") -> Turn:
    return Turn(text=text, tools=call("Bash", command=command, description=description).tools)


def _read(tree: Path, file: str, text: str = "") -> Turn:
    return Turn(text=text, tools=call("Read", file_path=str(tree / file)).tools)


def plans(trees: dict[str, Path]) -> list[Plan]:
    a, b, c = trees["a"], trees["b"], trees["c"]
    cart_tests = f"{PYTEST} tests/test_cart.py"
    fix_cart = [
        _bash(cart_tests, "Run the cart tests", "I'll run the cart tests first."),
        _read(a, "shop/cart.py", "test_discount_larger_than_the_order fails: the total is 500, not 0."),
        _edit(
            a, "shop/cart.py", project.CART_BUG, project.CART_FIX, "A discount above the subtotal keeps it."
        ),
        _bash(cart_tests, "Rerun the cart tests"),
        _bash("git commit -qam 'Cart: a discount larger than the order leaves 0'", "Commit the fix"),
        say("Fixed: `order_total` now returns 0 when the discount exceeds the subtotal; committed."),
    ]
    same_again = [
        _bash(cart_tests, "Run the cart tests", "Running the cart tests."),
        _read(b, "shop/cart.py"),
        _edit(
            b, "shop/cart.py", project.CART_BUG, project.CART_FIX, "The discount branch keeps the subtotal."
        ),
        _bash(cart_tests, "Rerun the cart tests"),
        say("The cart tests pass again: a discount larger than the order now gives 0."),
    ]
    discount_tests = f"{PYTEST} tests/test_discount.py"
    two_tries = [
        _bash(discount_tests, "Run the discount tests"),
        _read(c, "shop/discount.py", "Two rounding tests fail: the discount is floored."),
        _edit(c, "shop/discount.py", project.DISCOUNT_BUG, project.DISCOUNT_TRY, "Round instead of floor."),
        _bash(discount_tests, "Rerun the discount tests"),
        _edit(
            c,
            "shop/discount.py",
            project.DISCOUNT_TRY,
            project.DISCOUNT_FIX,
            "round() rounds 2.5 to 2 (half to even); the tests want half up.",
        ),
        _bash(discount_tests, "Rerun the discount tests"),
        say("`percent_off` rounds half up now; all discount tests pass."),
    ]
    mypy = "python -m mypy --strict shop/tax.py"
    type_error = [
        _bash(mypy, "Type-check the tax module"),
        _read(c, "shop/tax.py", "`RATES.get` may return None."),
        _edit(c, "shop/tax.py", project.TAX_BUG, project.TAX_FIX, "Regions without VAT get 0.0."),
        _bash(mypy, "Type-check again"),
        say("mypy is clean: `rate` returns 0.0 for regions without VAT."),
    ]
    inventory_tests = f"{PYTEST} tests/test_inventory.py"
    left_red = [
        _bash(inventory_tests, "Run the inventory tests"),
        _read(c, "shop/inventory.py", "The test expects `inventory.OutOfStock`."),
        _edit(c, "shop/inventory.py", project.INVENTORY_BUG, project.INVENTORY_TRY, "Refuse to oversell."),
        _bash(inventory_tests, "Rerun the inventory tests"),
        say(
            "Still failing: the test wants an `OutOfStock` exception that the module does not define, "
            "and I raise ValueError. Should `OutOfStock` subclass ValueError? I've stopped here."
        ),
    ]
    reading = [
        _read(a, "shop/cart.py", "Let me look at the cart module and run its tests."),
        _bash(cart_tests, "Run the cart tests"),
        _bash("git log --oneline -3", "Recent commits"),
        say("`order_total` sums the lines and takes the discount off, never going below zero; tests pass."),
    ]
    rates_tests = f"{PYTEST} tests/test_rates.py"
    flaky = [
        _bash(rates_tests, "Run the rates test"),
        _bash(rates_tests, "Rerun the rates test", "A timeout from the rates service; trying once more."),
        say("It passed on the second run: the first call timed out while the rates service woke up."),
    ]
    return [
        Plan(
            "01-cart-fix",
            "a",
            "The cart tests fail since the discount change. Fix it and commit.",
            fix_cart,
            "rgg",
        ),
        Plan("02-cart-again", "b", "Cart tests are red on this branch, please fix them.", same_again, "rg"),
        Plan("03-discount-two-tries", "c", "Make the discount tests pass.", two_tries, "rrg"),
        Plan("04-mypy-tax", "c", "mypy complains about shop/tax.py, please fix it.", type_error, "rg"),
        Plan("05-inventory-red", "c", "Fix the failing inventory test.", left_red, "rr"),
        Plan("06-read-only", "a", "How does the cart compute a total? Are its tests green?", reading, "gg"),
        Plan("07-flaky-rates", "c", "Check that the rates test passes.", flaky, "rg"),
    ]


def _outcomes(transcript: Path) -> str:
    events = read_transcript(transcript).events
    bash = [e for e in events if e.input.get("tool_name") == "Bash"]
    return "".join("r" if e.name == "PostToolUseFailure" else "g" for e in bash)


def _log_hooks(home: ClaudeHome) -> None:
    settings = home.root / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"type": "command", "command": _LOG_HOOK}
    hooks: dict[str, list[dict[str, Any]]] = {
        event: [{"matcher": "*", "hooks": [hook]} if event.startswith("PostToolUse") else {"hooks": [hook]}]
        for event in HOOK_EVENTS
    }
    settings.write_text(json.dumps({"hooks": hooks}, indent=1))


def record(out: Path, work: Path) -> list[Path]:
    trees = project.make_project(work)
    home = ClaudeHome.create(work / "claude-home")
    _log_hooks(home)
    hook_log = work / "hooks.jsonl"
    venv_bin = str(Path(sys.executable).parent)  # python (pytest, mypy) as the sessions' `python`
    env = dict(os.environ, PATH=os.pathsep.join([venv_bin, os.environ.get("PATH", os.defpath)]))
    env.pop("VIRTUAL_ENV", None)
    # This venv's pytest plugins (asyncio, coverage) are not the shop's: their warnings would
    # put this machine's paths into every run's output.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env[HOOK_LOG_ENV] = str(hook_log)
    (out / "hook-inputs").mkdir(parents=True, exist_ok=True)
    kept = []
    with ScriptedModel() as model:
        for plan in plans(trees):
            model.set_script(plan.script)
            hook_log.write_text("")
            session = home.run_session(
                plan.prompt, model=model, env=env, cwd=trees[plan.worktree], timeout=SESSION_TIMEOUT_S
            )
            if session.timed_out or session.returncode != 0 or session.script_errors:
                raise SystemExit(f"{plan.name}: the session failed: {session.stderr[-2000:]}")
            session_id = str(session.result.get("session_id", ""))
            found = [p for p in (home.root / ".claude" / "projects").glob(f"*/{session_id}.jsonl")]
            if not session_id or len(found) != 1:
                raise SystemExit(f"{plan.name}: no transcript for session {session_id!r}")
            got = _outcomes(found[0])
            if got != plan.outcomes:
                raise SystemExit(f"{plan.name}: Bash runs went {got!r}, not {plan.outcomes!r}")
            target = out / f"{plan.name}.jsonl"
            shutil.copyfile(found[0], target)
            shutil.copyfile(hook_log, out / "hook-inputs" / f"{plan.name}.jsonl")
            kept.append(target)
            print(f"{target}  session {session_id}  runs {got}", flush=True)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.capture.record", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="where the transcripts go")
    parser.add_argument("--keep-work", action="store_true", help="keep the project and Claude home")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lms-record-"))
    try:
        record(args.out, work)
    finally:
        if args.keep_work:
            print(f"work kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
