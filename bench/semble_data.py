"""semble's public code-search benchmark: its data (repositories, annotated queries) and its metric.

Shared by ``bench semble`` (full runs) and ``bench ranking`` (re-scoring kept indexes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BenchError
from bench.processes import REPO_ROOT

# The data lives beside this repository, not in it: its annotations are someone else's.
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "benchmarks" / "semble"
K = 10
CATEGORIES = ("semantic", "architecture", "symbol")
# --- the metric ----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    path: str
    start_line: int | None = None
    end_line: int | None = None


@dataclass(frozen=True)
class Hit:
    path: str  # relative to the repository's root, "/" separators
    start_line: int
    end_line: int


def parse_target(raw: str | dict[str, Any]) -> Target:
    if isinstance(raw, str):
        return Target(raw)
    start, end = raw.get("start_line"), raw.get("end_line")
    return Target(str(raw["path"]), None if start is None else int(start), None if end is None else int(end))


def path_matches(hit_path: str, target_path: str) -> bool:
    """Equal, or one is the other below some folder (paths may be given from different roots)."""
    a, b = hit_path.replace("\\", "/"), target_path.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def hit_covers(hit: Hit, target: Target) -> bool:
    if not path_matches(hit.path, target.path):
        return False
    if target.start_line is None or target.end_line is None:
        return True
    return not (hit.end_line < target.start_line or hit.start_line > target.end_line)


def target_rank(hits: Sequence[Hit], target: Target) -> int | None:
    """1-based rank of the first hit covering ``target`` among the first K, or None."""
    return next((rank for rank, hit in enumerate(hits[:K], start=1) if hit_covers(hit, target)), None)


def _dcg(gains: Iterable[int]) -> float:
    return sum(gain / math.log2(i + 2) for i, gain in enumerate(gains))


def ndcg_at_10(hits: Sequence[Hit], targets: Sequence[Target]) -> float:
    """NDCG@10 as semble's harness computes it.

    Ranks are over hits, not files (three hits from one file take three ranks); every target
    (relevant or secondary) has gain 1 at the rank of the first hit covering it; two targets first
    covered by the same hit add one gain, not two; the ideal is min(10, #targets) gains at the top.
    """
    if not targets:
        return 0.0
    gains = [0] * K
    for target in targets:
        rank = target_rank(hits, target)
        if rank is not None:
            gains[rank - 1] = 1
    return _dcg(gains) / _dcg([1] * min(K, len(targets)))


# --- data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    category: str
    targets: tuple[Target, ...]


def load_data(data: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    for needed in ("repos.json", "annotations", "published/per_repo.json"):
        if not (data / needed).exists():
            raise BenchError(f"{data / needed} is missing: pass --data with the benchmark's data folder")
    repos = json.loads((data / "repos.json").read_text())
    published = json.loads((data / "published" / "per_repo.json").read_text())["repos"]
    return repos, published


def annotated_queries(data: Path, name: str) -> list[Query]:
    raw = json.loads((data / "annotations" / f"{name}.json").read_text())
    return [
        Query(
            item["query"],
            item["category"],
            tuple(parse_target(t) for t in [*item.get("relevant", []), *item.get("secondary", [])]),
        )
        for item in raw
    ]


def select(repos: list[dict[str, Any]], wanted: str | None) -> list[dict[str, Any]]:
    if not wanted:
        return repos
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    known = {r["name"] for r in repos}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BenchError(f"unknown repositories {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [r for r in repos if r["name"] in names]


def hits_of(found: list[dict[str, Any]], benchmark_root: str | None) -> list[Hit]:
    """Hits with paths from the repository's root, as the annotations give them."""
    prefix = f"{benchmark_root.strip('/')}/" if benchmark_root else ""
    return [Hit(prefix + h["file_path"], int(h["start_line"]), int(h["end_line"])) for h in found]


def mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")


def mean_by_category(per_repo: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Mean over repositories, overall and per category (a category's mean over the repos that have it)."""
    out = {"all": mean(r["ndcg10"] for r in per_repo.values())}
    for c in CATEGORIES:
        out[c] = mean(r["by_category"][c] for r in per_repo.values() if c in r["by_category"])
    return out
