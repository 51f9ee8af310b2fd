"""Failures met without a fix of their own, matched by meaning to failures fixed before.

The Bash hook matches a failing run by signature, then by close words (``shared.fix_similarity``);
it never calls a model. Two failures can mean the same in other words (``ModuleNotFoundError: No
module named 'yaml'`` and ``ImportError: No module named yaml``), so at each mining the worker
embeds the session's failures that matched nothing and the project's fixed ones, and records in
the fix index which fixed failure each means the same as (``aliases``): the next time one of
them is met, the hook names that fix, as a close match.

``MEANING_CLOSE`` is high on purpose: the model's cosine between failure messages runs high for
unrelated messages of one library (a locked database and a missing table, 0.70), and a wrong
"seen before" costs the agent more than a missed one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from learning_memory.shared.contracts.capture import Failure
from learning_memory.shared.fix_index import FixIndex, failure_text
from learning_memory.shared.log import get_logger
from learning_memory.worker.services import JobRun

log = get_logger(__name__)
MEANING_CLOSE = 0.75
MAX_FIXES = 200  # the project's most recent fixed failures compared


async def alias_by_meaning(run: JobRun, index: FixIndex, project: str, failures: Sequence[Failure]) -> int:
    """Record what each of ``failures`` that matches no fix by signature or words means the same
    as; how many were matched so."""
    unmatched: dict[str, Failure] = {}
    for failure in failures:
        if failure.signature not in unmatched:
            known = await asyncio.to_thread(index.fixes_for, project, [failure], 1)
            if not known:
                unmatched[failure.signature] = failure
    if not unmatched:
        return 0
    fixed = await asyncio.to_thread(index.fix_texts, project, MAX_FIXES)
    fixed = [(signature, text) for signature, text in fixed if signature not in unmatched]
    if not fixed:
        return 0
    mine = [failure_text(f.error_type, f.message) for f in unmatched.values()]
    embedder = await run.services.embedder()
    vectors = np.asarray(await embedder.embed(mine + [text for _, text in fixed]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = vectors[: len(mine)] @ vectors[len(mine) :].T
    aliases: dict[str, list[tuple[str, float]]] = {}
    for row, signature in zip(similarity, unmatched, strict=True):
        best = int(np.argmax(row))
        # Recorded either way: a failure that once meant nothing fixed is checked again later.
        aliases[signature] = (
            [(fixed[best][0], round(float(row[best]), 4))] if row[best] >= MEANING_CLOSE else []
        )
    await asyncio.to_thread(index.set_aliases, project, aliases)
    matched = sum(1 for close in aliases.values() if close)
    if matched:
        log.info("capture.aliased_by_meaning", project=project, matched=matched, compared=len(aliases))
    return matched
