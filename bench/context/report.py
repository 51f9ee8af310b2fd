"""Figures and tables of ``python -m bench context``: recall, empty answers, tokens, latency."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import mean
from typing import Any

from bench.common import latency_summary_ms, print_table

TOP = 3
# What the prompt hook injects at most (server/hooks/tools.py), for the grid's simulated answers.
PROMPT_MAX_ITEMS = 4
TARGETS = {
    "recall_at_3": 0.8,
    "unrelated_empty": 0.9,
    "prompt_tokens_max": 300,
    "session_start_tokens_max": 400,
    "hook_p95_warm_ms": 50.0,
    "hook_max_without_worker_ms": 1000.0,
}


def recall(expected: Sequence[str], injected: Sequence[str]) -> float:
    return len(set(expected) & set(injected[:TOP])) / len(expected)


def _by_kind(rows: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [row for row in rows if row["kind"] == kind]


def cleared(row: dict[str, Any], bar: float) -> list[str]:
    """What the hook would inject at ``bar``: the no-bar ranking, cut at the bar and the item cap."""
    return [item for item, score in row["ranked"] if score >= bar][:PROMPT_MAX_ITEMS]


def quality(rows: list[dict[str, Any]], pick: Any) -> dict[str, float]:
    related = _by_kind(rows, "related")
    return {
        "recall_at_3": mean(recall(row["expected"], pick(row)) for row in related),
        "unrelated_empty": mean(not pick(row) for row in _by_kind(rows, "unrelated")),
        "near_miss_empty": mean(not pick(row) for row in _by_kind(rows, "near_miss")),
        "related_items_mean": mean(len(pick(row)) for row in related),
    }


def _grid(rows: list[dict[str, Any]], bars: list[float], bar: float) -> list[dict[str, Any]]:
    grid = [{"bar": b, **quality(rows, lambda row, b=b: cleared(row, b))} for b in [0.0, *bars]]
    print(f"\nrelevance bars (from assemble_context scores with no bar; the server's bar is {bar:.2f})")
    print_table(
        ["bar", "recall@3", "unrelated empty", "near misses empty", "items per related prompt"],
        [
            [
                "none" if g["bar"] == 0 else f"{g['bar']:.2f}" + (" *" if abs(g["bar"] - bar) < 1e-9 else ""),
                f"{g['recall_at_3']:.3f}",
                f"{g['unrelated_empty']:.0%}",
                f"{g['near_miss_empty']:.0%}",
                f"{g['related_items_mean']:.2f}",
            ]
            for g in grid
        ],
    )
    return grid


def _failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Related prompts that missed, and other prompts that got something, with the scores."""
    failures = []
    for row in rows:
        missed = row["kind"] == "related" and recall(row["expected"], row["injected"]) < 1
        spoke = row["kind"] != "related" and row["injected"]
        if not (missed or spoke):
            continue
        ranks = {item: (rank, score) for rank, (item, score) in enumerate(row["ranked"], 1)}
        failures.append(
            {
                "id": row["id"],
                "kind": row["kind"],
                "text": row["text"],
                "expected": {e: ranks.get(e) for e in row["expected"]},
                "injected": row["injected"],
                "top": row["ranked"][:4],
            }
        )
    if failures:
        print("\nmisses (expected: rank, score with no bar; top: the no-bar ranking)")
        for f in failures:
            expected = ", ".join(
                f"{e} " + (f"#{r[0]} {r[1]:.2f}" if r else "not in top 8") for e, r in f["expected"].items()
            )
            top = ", ".join(f"{item} {score:.2f}" for item, score in f["top"])
            print(f"- {f['id']} ({f['kind']}) {f['text'][:90]!r}")
            print(
                f"    expected: {expected or '-'} | injected: {', '.join(f['injected']) or '-'} | top: {top}"
            )
    return failures


def _tokens(values: Sequence[int]) -> dict[str, float]:
    spoken = [v for v in values if v]
    return {"answered": len(spoken), "mean": mean(spoken) if spoken else 0.0, "max": max(values, default=0)}


def _mean_max(tokens: dict[str, float]) -> str:
    return f"{tokens['mean']:.0f} / {tokens['max']:.0f}"


def _latency_table(
    title: str, hooks: dict[str, dict[str, Any]], target_ms: float, stat: str
) -> dict[str, Any]:
    summaries = {name: latency_summary_ms(h["samples"]) for name, h in hooks.items()}
    print(f"\n{title}")
    rows = []
    for name, s in summaries.items():
        # SessionStart is a command hook, a process of its own: the MCP call's target is not its.
        process = name == "session_start"
        key, limit = ("max_ms", TARGETS["hook_max_without_worker_ms"]) if process else (stat, target_ms)
        ok = s[key] <= limit
        target = f"{key[:-3]} ≤ {limit:.0f}" + (" (a process)" if process else "")
        figures = [f"{s[k]:.1f}" for k in ("p50_ms", "p95_ms", "max_ms")]
        rows.append([name, str(s["n"]), *figures, target, "PASS" if ok else "FAIL"])
    print_table(["hook", "n", "p50 ms", "p95 ms", "max ms", "target", ""], rows)
    tokens = {name: _tokens(h["tokens"]) for name, h in hooks.items()}
    return {"latency": summaries, "tokens": tokens, "answered": {n: h["answered"] for n, h in hooks.items()}}


def report(
    *,
    rows: list[dict[str, Any]],
    bar: float,
    bars: list[float],
    warm: dict[str, dict[str, Any]],
    no_worker: dict[str, dict[str, Any]],
    no_redis: dict[str, Any],
    claude: dict[str, Any] | None,
    brief_without_history: int,
    timings: dict[str, float],
) -> dict[str, Any]:
    hooked = quality(rows, lambda row: row["injected"])
    no_bar = quality(rows, lambda row: [item for item, _ in row["ranked"]])
    prompt_tokens = _tokens([row["injected_tokens"] for row in rows])
    brief = _tokens(warm["session_start"]["tokens"])
    counts = {kind: len(_by_kind(rows, kind)) for kind in ("related", "unrelated", "near_miss")}
    print("\nprompts: " + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items()))
    verdicts = {
        "recall_at_3": hooked["recall_at_3"] >= TARGETS["recall_at_3"],
        "unrelated_empty": hooked["unrelated_empty"] >= TARGETS["unrelated_empty"],
        "prompt_tokens": prompt_tokens["max"] <= TARGETS["prompt_tokens_max"],
        "session_start_tokens": brief["max"] <= TARGETS["session_start_tokens_max"],
    }
    v = verdicts
    table: list[list[Any]] = [
        [
            f"recall@3 of injected context (bar {bar:.2f})",
            f"{hooked['recall_at_3']:.3f}",
            "≥ 0.8",
            v["recall_at_3"],
        ],
        [
            "unrelated prompts given nothing",
            f"{hooked['unrelated_empty']:.0%}",
            "≥ 90%",
            v["unrelated_empty"],
        ],
        ["near misses given nothing", f"{hooked['near_miss_empty']:.0%}", "-", None],
        ["recall@3 with no bar", f"{no_bar['recall_at_3']:.3f}", "-", None],
        ["prompt context tokens, mean / max", _mean_max(prompt_tokens), "max ≤ 300", v["prompt_tokens"]],
        ["SessionStart brief tokens, mean / max", _mean_max(brief), "max ≤ 400", v["session_start_tokens"]],
        ["SessionStart brief tokens, no history yet", str(brief_without_history), "-", None],
    ]
    print_table(
        ["measure", "value", "target", ""],
        [[*row[:3], "" if row[3] is None else "PASS" if row[3] else "FAIL"] for row in table],
    )
    grid = _grid(rows, bars, bar)
    failures = _failures(rows)
    warm_part = _latency_table(
        "hooks, warm worker (through the MCP call)", warm, TARGETS["hook_p95_warm_ms"], "p95_ms"
    )
    limit = TARGETS["hook_max_without_worker_ms"]
    cold_part = _latency_table("hooks, worker stopped (Redis up)", no_worker, limit, "max_ms")
    if "error" in no_redis:
        print(f"\nhooks, Redis never answers: {no_redis['error']}")
        silent_part: dict[str, Any] = no_redis
    else:
        silent_part = _latency_table("hooks, Redis never answers", no_redis["hooks"], limit, "max_ms")
        silent_part["initialize_s"] = no_redis["initialize_s"]
        silent_part["loaded_s"] = no_redis["loaded_s"]
        print(
            f"server with a silent Redis: initialize {no_redis['initialize_s'] * 1000:.0f} ms, "
            f"first tool answered {no_redis['loaded_s'] * 1000:.0f} ms after the spawn"
        )
    mcp_hooks = [name for name in warm if name != "session_start"]
    verdicts["hook_p95_warm"] = all(
        warm_part["latency"][n]["p95_ms"] <= TARGETS["hook_p95_warm_ms"] for n in mcp_hooks
    )
    verdicts["hooks_without_worker"] = all(s["max_ms"] <= limit for s in cold_part["latency"].values())
    if "latency" in silent_part:
        verdicts["hooks_without_redis"] = all(s["max_ms"] <= limit for s in silent_part["latency"].values())
    if claude is not None:
        from bench.context.claude import print_report  # only with Claude Code installed

        print_report(claude)
    print(
        f"\nseeded in {timings['seed_s']:.1f}s; whole bench {timings.get('total_s', 0):.0f}s "
        "(seeding, prompts, hooks warm and cold, Claude Code sessions)"
    )
    return {
        "bar": bar,
        "counts": counts,
        "quality": {"hook": hooked, "no_bar": no_bar},
        "grid": grid,
        "tokens": {
            "prompt_context": prompt_tokens,
            "session_start": brief,
            "session_start_no_history": brief_without_history,
        },
        "warm": warm_part,
        "no_worker": cold_part,
        "no_redis": silent_part,
        "claude": claude,
        "failures": failures,
        "prompts": [
            {k: row[k] for k in ("id", "kind", "expected", "injected", "injected_tokens", "ranked")}
            for row in rows
        ],
        "timings": timings,
        "pass": verdicts,
    }
