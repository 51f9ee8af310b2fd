"""Tables and the JSON document of ``python -m bench capture``: per session and in total, each hook
tool's latency, what was stored, and the scores against the labels ("n/a": not provided)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.capture.runner import CallRecord, Session, calls_by_tool, record_json
from bench.capture.scoring import Scores
from bench.capture.stored import Mined
from bench.common import latency_summary_ms, print_table

NA = "n/a"
MINED_KEYS = ("episodes", "stored", "merged", "absorbed")
TOP_ERRORS = 5


def _fmt(value: float | int | None, percent: bool = False) -> str:
    if value is None:
        return NA
    return f"{value:.0%}" if percent else (f"{value:.3f}" if isinstance(value, float) else str(value))


def session_rows(sessions: list[Session], calls: list[CallRecord], mined: Mined) -> list[dict[str, Any]]:
    rows = []
    for session in sessions:
        sid = session.transcript.session_id
        own = [c for c in calls if c.session_id == sid]
        answers = mined.by_session.get(sid)
        rows.append(
            {
                "session_id": sid,
                "group": session.group,
                "worktree": session.worktree.name,
                "events": len(session.events),
                "events_by_name": dict(Counter(e.name for e in session.events)),
                "hook_calls": len(own),
                "errors": sum(c.error is not None for c in own),
                "fix_hints": sum(bool(c.context) for c in own if c.tool == "hook_tool_outcome"),
                "prompt_contexts": sum(bool(c.context) for c in own if c.tool == "hook_prompt_context"),
                "stop_blocks": sum(c.blocked for c in own),
                **{k: (answers or {}).get(k) if answers is not None else None for k in MINED_KEYS},
                "files": session.files.__dict__,
                "stats": session.transcript.stats.as_dict(),
            }
        )
    return rows


def _print_sessions(rows: list[dict[str, Any]], mined: Mined) -> None:
    headers = [
        "session",
        "worktree",
        "events",
        "calls",
        "errors",
        "fix hints",
        "episodes",
        "stored",
        "merged",
    ]
    table = [
        [
            r["session_id"][:8],
            f"{r['group']}/{r['worktree']}",
            str(r["events"]),
            str(r["hook_calls"]),
            str(r["errors"]),
            str(r["fix_hints"]),
            _fmt(r["episodes"]),
            _fmt(r["stored"]),
            _fmt(r["merged"]),
        ]
        for r in rows
    ]
    total = {k: sum(r[k] for r in rows) for k in ("events", "hook_calls", "errors", "fix_hints")}
    got = mined.totals if mined.jobs else {}
    table.append(
        [
            "total",
            "",
            str(total["events"]),
            str(total["hook_calls"]),
            str(total["errors"]),
            str(total["fix_hints"]),
            _fmt(got.get("episodes")),
            _fmt(got.get("stored")),
            _fmt(got.get("merged")),
        ]
    )
    print_table(headers, table)


def latency(calls: list[CallRecord]) -> dict[str, dict[str, Any]]:
    summary = {}
    for tool, records in sorted(calls_by_tool(calls).items()):
        errors = Counter(r.error for r in records if r.error)
        summary[tool] = {
            **latency_summary_ms([r.seconds for r in records]),
            "errors": sum(errors.values()),
            "with_context": sum(bool(r.context) for r in records),
            "top_errors": [{"error": e, "count": n} for e, n in errors.most_common(TOP_ERRORS)],
        }
    return summary


def _print_latency(summary: dict[str, dict[str, Any]]) -> None:
    print("\nhook tools (every call, errors included)")
    print_table(
        ["tool", "calls", "errors", "with context", "p50 ms", "p95 ms"],
        [
            [
                tool,
                str(s["n"]),
                str(s["errors"]),
                str(s["with_context"]),
                f"{s['p50_ms']:.1f}",
                f"{s['p95_ms']:.1f}",
            ]
            for tool, s in summary.items()
        ],
    )
    for tool, s in summary.items():
        for item in s["top_errors"][:2]:
            print(f"  {tool} error x{item['count']}: {item['error'][:160]}")


def _print_scores(scores: Scores, labelled: int) -> None:
    print(f"\nagainst the labels ({labelled} labelled sessions replayed)")
    print_table(
        ["measure", "value"],
        [
            [
                "episode recall",
                f"{_fmt(scores.episode_recall)} ({scores.episodes_found}/{scores.episodes_labelled})",
            ],
            ["episode precision", _fmt(scores.episode_precision)],
            [
                "fix-hint recall@1 on recurring failures",
                f"{_fmt(scores.fix_hint_recall_at_1)} (of {scores.recurring_failures})",
            ],
            ["fix-hint recall, file named anywhere", _fmt(scores.fix_hint_recall_any)],
            [
                "first-time failures that got nothing",
                f"{_fmt(scores.first_time_nothing, percent=True)} (of {scores.first_time_failures})",
            ],
        ],
    )
    if scores.missed:
        print(f"  labelled episodes not found: {', '.join(scores.missed)}")
    for note in scores.notes:
        print(f"  note: {note}")


def report(
    sessions: list[Session],
    calls: list[CallRecord],
    mined: Mined,
    stored: dict[str, Any],
    scores: Scores,
    labelled: int,
) -> dict[str, Any]:
    rows = session_rows(sessions, calls, mined)
    summary = latency(calls)
    print()
    _print_sessions(rows, mined)
    _print_latency(summary)
    print(
        f"\nmine_session jobs: {mined.jobs} ({mined.failed_jobs} failed); fix index: "
        f"{stored['fix_index_rows'] if stored['fix_index_rows'] is not None else 'absent'}; "
        f"session logs: {len(stored['session_logs'])}"
    )
    _print_scores(scores, labelled)
    return {
        "sessions": rows,
        "totals": {
            "sessions": len(rows),
            **{
                k: sum(r[k] for r in rows)
                for k in ("events", "hook_calls", "errors", "fix_hints", "prompt_contexts")
            },
            "mined": mined.totals if mined.jobs else None,
        },
        "latency_ms": summary,
        "stored": {**stored, "mine_jobs": mined.jobs, "mine_jobs_failed": mined.failed_jobs},
        "scores": scores.__dict__,
        "answers_with_context": [record_json(c) for c in calls if c.context or c.blocked],
    }
