"""File-level rules: hits are read by file.

A short topical question asks about a part of the project, whose home is usually the file holding
most code on it (:func:`centrality`); and a file's second unit tells less than the first unit of
another file (:func:`spread`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from learning_memory.worker.code.search.candidate import Candidate


def centrality(
    candidates: Sequence[Candidate], file_sizes: Mapping[tuple[str, str], int]
) -> dict[str, float]:
    """Per candidate, log(units in its file) over log(units in the largest candidate file)."""
    size = {c.point_id: file_sizes.get(c.unit.file, 1) for c in candidates}
    top = math.log1p(max(size.values(), default=1))
    return {pid: math.log1p(n) / top for pid, n in size.items()} if top else {}


def spread(
    ranked: list[tuple[str, float]], file_of: Mapping[str, str], repeat: float
) -> list[tuple[str, float]]:
    """Greedily, the best unit once each unit loses ``repeat`` per unit of its file already taken.
    ``ranked``: (point id, relevance), best first; ``file_of``: each point id's file path."""
    taken: dict[str, int] = {}
    remaining = list(ranked)
    out: list[tuple[str, float]] = []
    while remaining:
        best, best_score = 0, float("-inf")
        for i, (pid, score) in enumerate(remaining):
            if score <= best_score:
                break  # sorted: no later unit can do better, whatever its file
            score -= repeat * taken.get(file_of[pid], 0)
            if score > best_score:
                best, best_score = i, score
        pid, _ = remaining.pop(best)
        taken[file_of[pid]] = taken.get(file_of[pid], 0) + 1
        out.append((pid, best_score))
    return out
