"""Recall@k and MRR over ranked ids, per category, and the table rows that show them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

KS = (3, 5, 10)


@dataclass
class Scores:
    """Per-question figures of one mode, grouped by category."""

    by_category: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: str, ranked: Sequence[str], relevant: Iterable[str]) -> None:
        wanted = set(relevant)
        figures = {f"r@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in KS}
        first = next((n for n, item in enumerate(ranked, start=1) if item in wanted), None)
        figures["mrr"] = 1.0 / first if first else 0.0
        self.by_category[category].append(figures)

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        rows = [row for rows in self.by_category.values() for row in rows]
        for name, group in [*sorted(self.by_category.items()), ("all", rows)]:
            if group:
                out[name] = {key: round(sum(r[key] for r in group) / len(group), 3) for key in group[0]}
                out[name]["questions"] = len(group)
        return out


def table_rows(results: dict[str, dict[str, dict[str, float]]], metric: str) -> list[list[Any]]:
    """One row per category, one column per mode, for ``metric``."""
    modes = list(results)
    categories = list(next(iter(results.values())))
    return [[category, *(results[mode][category][metric] for mode in modes)] for category in categories]


def p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0
