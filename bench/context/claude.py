"""The hooks' latency as Claude Code itself measures it: real headless sessions with the plugin
installed, a scripted model, related and unrelated prompts, a test run through Bash and a Write.

Uses ``tests.support.claude_code`` (the driver) and reads each session's debug file for per-hook times.
The sessions' MCP server is the plugin's own ``learning-memory serve``, pointed by the
environment at the bench's Redis namespace, data and journal, so its warm worker answers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.common import latency_summary_ms, print_table, progress
from tests.support.claude_code import ClaudeHome
from tests.support.scripted_model import call, say

PASSING_TEST = "def test_totals():\n    assert round(0.1 + 0.2, 2) == 0.3\n"


def _hook_name(kind: str, name: str) -> str:
    if kind == "command":
        return "session_start" if "session-start" in name else name
    return name


def _prompts(labelled: dict[str, Any], session: int) -> list[dict[str, Any]]:
    """Two related prompts and an unrelated one per session, different in each session."""
    related = [p for p in labelled["prompts"] if p["kind"] == "related"]
    unrelated = [p for p in labelled["prompts"] if p["kind"] == "unrelated"]
    return [related[2 * session], unrelated[session], related[2 * session + 1]]


def run_sessions(env: dict[str, str], tmp: Path, labelled: dict[str, Any], sessions: int) -> dict[str, Any]:
    home = ClaudeHome.create(tmp / "claude-home")
    home.install_plugin()
    project = tmp / "claude-project"
    project.mkdir(exist_ok=True)
    (project / "test_totals.py").write_text(PASSING_TEST)
    samples: dict[str, list[float]] = {}
    outcomes: dict[str, dict[str, int]] = {}
    shown = dict.fromkeys(
        (
            "prompt_contexts",
            "related_prompts",
            "unrelated_prompts",
            "session_start_contexts",
            "test_outcome_contexts",
        ),
        0,
    )
    per_session: list[dict[str, Any]] = []
    for n in range(sessions):
        prompts = _prompts(labelled, n)
        script = [
            call(
                "Bash", command=f"{sys.executable} -m pytest -q test_totals.py", description="run the tests"
            ),
            say("The tests pass."),
            say("Nothing stored about that."),
            call("Write", file_path=str(project / f"notes_{n}.md"), content="# notes\n"),
            say("Noted."),
        ]
        session = home.run_session([p["text"] for p in prompts], script, env=env, cwd=project)
        if session.returncode != 0 or session.timed_out:
            progress(
                f"context: Claude Code session {n} ended with {session.returncode}: {session.stderr[-300:]}"
            )
        for timing in session.hook_timings():
            name = _hook_name(timing.kind, timing.name)
            outcomes.setdefault(name, {}).setdefault(timing.outcome, 0)
            outcomes[name][timing.outcome] += 1
            if timing.ms is not None:
                samples.setdefault(name, []).append(timing.ms / 1000)
        # What reached the model: one context per prompt that cleared the bar, none for the others.
        contexts = session.hook_contexts("UserPromptSubmit")
        per_session.append({"prompts": [p["id"] for p in prompts], "prompt_contexts": contexts})
        shown["prompt_contexts"] += len(contexts)
        shown["related_prompts"] += sum(p["kind"] == "related" for p in prompts)
        shown["unrelated_prompts"] += sum(p["kind"] != "related" for p in prompts)
        shown["session_start_contexts"] += len(session.hook_contexts("SessionStart"))
        shown["test_outcome_contexts"] += len(session.hook_contexts("PostToolUse:Bash"))
    summaries = {name: latency_summary_ms(values) for name, values in samples.items()}
    return {
        "sessions": sessions,
        "latency": summaries,
        "outcomes": outcomes,
        "shown": shown,
        "per_session": per_session,
    }


def print_report(result: dict[str, Any]) -> None:
    summaries, outcomes = result["latency"], result["outcomes"]
    print(f"\nhooks as Claude Code measured them ({result['sessions']} sessions, from its debug log)")
    print_table(
        ["hook", "n", "p50 ms", "p95 ms", "max ms", "outcomes"],
        [
            [
                name,
                str(s["n"]),
                *(f"{s[k]:.0f}" for k in ("p50_ms", "p95_ms", "max_ms")),
                ", ".join(f"{k} {v}" for k, v in sorted(outcomes.get(name, {}).items())),
            ]
            for name, s in sorted(summaries.items())
        ],
    )
    print(
        "shown to the model: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in result["shown"].items())
    )
