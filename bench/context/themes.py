"""The second labelled set of ``bench context``: a bar (or a ranking change) chosen on the first
set must hold on another history too.

The history is the bundled sample experiences (``learning_memory.cli.samples``, eight themes); a
related prompt of ``bench/data/context_themes.json`` names the theme whose experiences should
surface, any of them; an unrelated prompt should get nothing. Its own worker and data folder, so
the two histories never mix.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from statistics import mean
from typing import Any

from bench.common import print_table, progress
from bench.context.calls import ITEM_ID, call, hook_text, injected_context
from bench.context.report import PROMPT_MAX_ITEMS, TOP
from bench.processes import serving
from learning_memory.cli.samples import THEMES, demo_entries

THEMES_PATH = Path(__file__).resolve().parents[1] / "data" / "context_themes.json"


def _quality(rows: list[dict[str, Any]], pick: Any) -> dict[str, float]:
    related = [row for row in rows if row["theme"]]
    return {
        "hit_at_3": mean(row["theme"] in pick(row)[:TOP] for row in related),
        "unrelated_empty": mean(not pick(row) for row in rows if not row["theme"]),
    }


async def run_themes(
    redis_url: str, tmp: Path, bar: float, bars: list[float], env: dict[str, str]
) -> dict[str, Any]:
    labelled = json.loads(THEMES_PATH.read_text())
    await asyncio.to_thread(tmp.mkdir, parents=True, exist_ok=True)
    async with serving(redis_url, tmp, extra_env=env) as (client, _):
        await call(client, "assemble_context", {"query": "warm-up"})  # the model is loaded
        theme_of: dict[str, str] = {}
        for sample in demo_entries():
            await call(client, "start_ghap", sample.start)
            answer = await call(client, "resolve_ghap", sample.resolve)
            theme_of[f"exp:{answer['id']}"] = THEMES[sample.theme].name
        progress(f"context: second set, {len(theme_of)} sample experiences seeded; judging prompts")
        rows = []
        for prompt in labelled["prompts"]:
            text, _ = await hook_text(client, "hook_prompt_context", {"prompt": prompt["text"]})
            injected = [theme_of.get(i, i) for i in dict.fromkeys(ITEM_ID.findall(injected_context(text)))]
            ranked = await call(
                client,
                "assemble_context",
                {"query": prompt["text"], "budget_tokens": 4_000, "min_score": 0.0},
            )
            scored = [(theme_of.get(i["id"], i["id"]), i["score"]) for i in ranked["items"]]
            rows.append({**prompt, "injected": injected, "ranked": scored})

    def at(b: float) -> Any:
        return lambda row: [theme for theme, score in row["ranked"] if score >= b][:PROMPT_MAX_ITEMS]

    hooked = _quality(rows, lambda row: row["injected"])
    grid = [{"bar": b, **_quality(rows, at(b))} for b in bars]
    related = sum(1 for row in rows if row["theme"])
    print(f"\nsecond set (sample themes): {related} related prompts, {len(rows) - related} unrelated")
    print_table(
        ["bar", "theme in top 3", "unrelated empty"],
        [[f"{bar:.2f} (hook)", f"{hooked['hit_at_3']:.3f}", f"{hooked['unrelated_empty']:.0%}"]]
        + [[f"{g['bar']:.2f}", f"{g['hit_at_3']:.3f}", f"{g['unrelated_empty']:.0%}"] for g in grid],
    )
    return {"hook": hooked, "grid": grid, "rows": rows}
