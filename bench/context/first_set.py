"""The first labelled set of ``bench context`` (``bench/data/context_set.json``): its history
stored through the tools, and what the prompt hook injects for each of its prompts."""

from __future__ import annotations

from typing import Any

from mcp import Client

from bench.context.calls import ITEM_ID, call, hook_text, injected_context
from learning_memory.shared.context_lines import estimate_tokens


async def seed(client: Client, labelled: dict[str, Any]) -> dict[str, str]:
    """Store the set's history; return each context id (exp:…, mem:…) → the set's local id."""
    local: dict[str, str] = {}
    for e in labelled["experiences"]:
        start = {k: e[k] for k in ("domain", "strategy", "goal", "hypothesis", "action", "prediction")}
        await call(client, "start_ghap", start)
        resolution = {k: e[k] for k in ("status", "result", "surprise", "root_cause", "lesson") if k in e}
        answer = await call(client, "resolve_ghap", resolution)
        local[f"exp:{answer['id']}"] = e["id"]
    for m in labelled["memories"]:
        stored = await call(
            client, "store_memory", {k: m[k] for k in ("content", "category", "importance", "tags")}
        )
        local[f"mem:{stored['id']}"] = m["id"]
    return local


async def judge_prompts(
    client: Client, labelled: dict[str, Any], local: dict[str, str]
) -> tuple[list[dict[str, Any]], list[float]]:
    """Each prompt's injected ids (through the hook) and its ranking with no bar; hook latencies."""
    rows, latencies = [], []
    for prompt in labelled["prompts"]:
        text, elapsed = await hook_text(client, "hook_prompt_context", {"prompt": prompt["text"]})
        latencies.append(elapsed)
        block = injected_context(text)
        injected = [local.get(i, i) for i in dict.fromkeys(ITEM_ID.findall(block))]
        # The hook's embedding is cached now, so this call costs a vector search only.
        ranked = await call(
            client, "assemble_context", {"query": prompt["text"], "budget_tokens": 4_000, "min_score": 0.0}
        )
        rows.append(
            {
                **prompt,
                "injected": injected,
                "injected_tokens": estimate_tokens(block),
                "ranked": [(local.get(i["id"], i["id"]), round(i["score"], 3)) for i in ranked["items"]],
            }
        )
    return rows, latencies
