"""semble's public code-search benchmark: NDCG@10 per repository and category beside the published figures.

Nothing is fetched at run time. ``--repos-dir DIR`` holds one checkout per repository, named as in
the benchmark's ``repos.json`` (``DIR/flask``, ``DIR/cobra``, ...), each at its pinned revision (a
git checkout at another revision is refused). ``--data DIR`` holds ``repos.json``,
``annotations/<name>.json`` and ``published/per_repo.json``; the data stays outside this repository.

Each repository gets a worker and a data folder of its own (so BM25 statistics, caches and
vectors never mix), a real MCP client over stdio, arq mode: its ``benchmark_root`` is indexed with
``index_codebase`` (timed once the model is loaded), then every annotated query is asked with
``search_code`` (limit 10, project = the repository). ``--mode lexical|semantic`` asks the search
room in that mode instead (``bench.search_modes``), in this process once the worker has stopped,
as ``bench code_quality`` does. The metric is semble's harness's, see :func:`ndcg_at_10`.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.code import call_tool, index_project, peak_rss_mib
from bench.common import BenchError, print_table, progress
from bench.processes import REPO_ROOT, serving
from bench.search_modes import Mode, open_services, search
from bench.semble_data import (
    CATEGORIES,
    DEFAULT_DATA,
    K,
    Query,
    annotated_queries,
    hits_of,
    load_data,
    mean,
    mean_by_category,
    ndcg_at_10,
    select,
    target_rank,
)
from learning_memory.shared.settings import Settings

PUBLISHED = {"semble": "semble_hybrid", "CRE hybrid": "coderankembed_hybrid", "BM25": "bm25"}
MODES: tuple[Mode, ...] = ("hybrid", "lexical", "semantic")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repos-dir",
        type=Path,
        default=None,
        help="checkouts at the pinned revisions, one sub-folder per repository name (required)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"repos.json, annotations/, published/ ({DEFAULT_DATA})",
    )
    parser.add_argument("--repos", default=None, help="comma-separated names to run (default: all)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep each repository's index here and reuse it next run (index times then measure "
        "an incremental index): for trying ranking changes",
    )
    parser.add_argument(
        "--embedding-model",
        default=None,
        help="LMS_EMBEDDING_MODEL for the workers, e.g. hashing:384 (default: the bundled model)",
    )
    parser.add_argument(
        "--fast-tier",
        action="store_true",
        help="LMS_CODE_VECTORS=false: search_code as it answers before any vector is filled in",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="hybrid",
        help="hybrid = the search_code tool; lexical/semantic = the search room in that mode (hybrid)",
    )


def _checkout_root(repos_dir: Path, spec: dict[str, Any]) -> Path:
    """The folder to index; refuse a checkout at another revision, whose files the queries may not fit."""
    checkout = repos_dir / spec["name"]
    if not checkout.is_dir():
        raise BenchError(f"{checkout} is missing: clone {spec['url']} there and check out {spec['revision']}")
    if (checkout / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if head != spec["revision"]:
            raise BenchError(f"{checkout} is at {head or '?'}, not the pinned {spec['revision']}")
    else:
        progress(f"semble: {checkout} is not a git checkout; its revision cannot be checked")
    root: Path = checkout / str(spec["benchmark_root"]) if spec.get("benchmark_root") else checkout
    if not root.is_dir():
        raise BenchError(f"{root} (benchmark_root) is missing")
    return root


# --- one repository ------------------------------------------------------------------------


def _judged(
    query: Query, found: list[dict[str, Any]], seconds: float, spec: dict[str, Any]
) -> dict[str, Any]:
    """One query's figures from its hits."""
    hits = hits_of(found, spec.get("benchmark_root"))
    ranks = [target_rank(hits, t) for t in query.targets]
    return {
        "query": query.text,
        "category": query.category,
        "ndcg10": ndcg_at_10(hits, query.targets),
        "found_any": any(r is not None for r in ranks),
        "target_ranks": ranks,
        "top": [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits],
        "seconds": seconds,
    }


async def _run_repo(
    args: argparse.Namespace, spec: dict[str, Any], root: Path, queries: list[Query], tmp: Path
) -> dict[str, Any]:
    name = spec["name"]
    namespace = f"bench-semble-{name}-{time.time_ns()}"
    extra = {"LMS_EMBEDDING_MODEL": args.embedding_model} if args.embedding_model else {}
    if args.fast_tier:
        extra["LMS_CODE_VECTORS"] = "false"
    started = time.perf_counter()
    async with serving(args.redis_url, tmp, namespace, extra_env=extra) as (client, worker):
        # The model loads on the first index: a one-function project first, so the timed index is warm.
        warm = tmp / "warm-up"
        warm.mkdir(exist_ok=True)
        (warm / "warm.py").write_text("def warm_up():\n    return 1\n")
        await index_project(client, warm, "warm-up")
        await call_tool(client, "delete_project_index", {"project": "warm-up"})
        load_s = time.perf_counter() - started
        stats, complete_s = await index_project(client, root, name)
        # The worker's high-water mark: the model, the cold index and every vector, nothing else yet.
        peak_rss = peak_rss_mib(worker.pid)
        index_s = stats["searchable_s"]
        projects = (await call_tool(client, "list_indexed_projects", {}))["projects"]
        units = next((p["units"] for p in projects if p["project"] == name), 0)
        progress(
            f"semble: {name}: {units} units, {stats['files_indexed']} files searchable in {index_s:.1f}s "
            f"({units / index_s:.0f} units/s), every vector in {complete_s:.1f}s "
            f"(worker up and model loaded in {load_s:.0f}s)"
        )
        per_query: list[dict[str, Any]] = []
        if args.mode == "hybrid":
            for query in queries:
                asked = time.perf_counter()
                answer = await call_tool(
                    client, "search_code", {"query": query.text, "project": name, "limit": K}
                )
                per_query.append(_judged(query, answer["results"], time.perf_counter() - asked, spec))
    if args.mode != "hybrid":
        # BM25 alone is no tool, and a question is no snippet: the search room answers here.
        services = open_services(tmp / "data", fast_tier=args.fast_tier, embedding_model=args.embedding_model)
        try:
            for query in queries:
                asked = time.perf_counter()
                hits = await search(services, query.text, project=name, limit=K, mode=args.mode)
                found = [hit.model_dump() for hit in hits]
                per_query.append(_judged(query, found, time.perf_counter() - asked, spec))
        finally:
            await services.close()
    return {
        "language": spec["language"],
        "revision": spec["revision"],
        "units": units,
        "files_indexed": stats["files_indexed"],
        "index_errors": len(stats.get("errors", [])),
        "index_s": index_s,  # until searchable: index_codebase answered
        "units_per_s": units / index_s if index_s else None,
        "complete_s": complete_s,  # until every unit had its vector
        "peak_rss_mib": peak_rss,
        "ndcg10": mean(q["ndcg10"] for q in per_query),
        # Of each query's targets, the share in the top 10 (then the mean over queries).
        "recall10": mean(
            sum(r is not None for r in q["target_ranks"]) / max(1, len(q["target_ranks"])) for q in per_query
        ),
        "by_category": {
            c: mean(q["ndcg10"] for q in per_query if q["category"] == c)
            for c in CATEGORIES
            if any(q["category"] == c for q in per_query)
        },
        "queries": per_query,
    }


# --- report ---------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.3f}"


def _report(
    args: argparse.Namespace, ours: dict[str, dict[str, Any]], published: dict[str, Any]
) -> dict[str, Any]:
    names = list(ours)
    theirs = {
        label: {n: published[n][key] for n in names if n in published} for label, key in PUBLISHED.items()
    }
    label = f"ours ({args.mode}{', fast tier' if args.fast_tier else ''})"
    rows = []
    for n in names:
        r = ours[n]
        rows.append(
            [
                n,
                r["language"],
                str(r["units"]),
                f"{r['index_s']:.2f}" if r["index_s"] < 10 else f"{r['index_s']:.1f}",
                f"{r['units_per_s']:.0f}",
                f"{r['complete_s']:.1f}",
                f"{r['peak_rss_mib']:.0f}" if r.get("peak_rss_mib") else "n/a",
                _fmt(r["recall10"]),
                _fmt(r["ndcg10"]),
                *[_fmt(theirs[p][n]["ndcg10"] if n in theirs[p] else None) for p in PUBLISHED],
            ]
        )
    total_units = sum(r["units"] for r in ours.values())
    total_s = sum(r["index_s"] for r in ours.values())
    total_complete_s = sum(r["complete_s"] for r in ours.values())
    peak_rss = max((r.get("peak_rss_mib") or 0.0 for r in ours.values()), default=0.0)
    ours_summary = mean_by_category(ours)
    published_summary = {p: mean_by_category(theirs[p]) for p in PUBLISHED if len(theirs[p]) == len(names)}
    rows.append(
        [
            f"mean of {len(names)}",
            "",
            str(total_units),
            f"{total_s:.1f}",
            f"{total_units / total_s:.0f}" if total_s else "—",
            f"{total_complete_s:.1f}",
            f"max {peak_rss:.0f}" if peak_rss else "n/a",
            _fmt(mean(r["recall10"] for r in ours.values())),
            _fmt(ours_summary["all"]),
            *[_fmt(published_summary.get(p, {}).get("all")) for p in PUBLISHED],
        ]
    )
    print(f"\nNDCG@10, {label}; embedding model: {args.embedding_model or 'bundled'}")
    print_table(
        [
            "repository",
            "language",
            "units",
            "searchable s",
            "units/s",
            "all vectors s",
            "peak worker RSS MiB",
            "target recall@10",
            label,
            *PUBLISHED,
        ],
        rows,
    )
    print("\nby category (mean over repositories; ours / semble / CRE hybrid / BM25)")
    cat_rows = [
        [
            n,
            *[
                " / ".join(
                    [
                        _fmt(ours[n]["by_category"].get(c)),
                        *[
                            _fmt(theirs[p][n]["by_category"].get(c)) if n in theirs[p] else "—"
                            for p in PUBLISHED
                        ],
                    ]
                )
                for c in CATEGORIES
            ],
        ]
        for n in names
    ]
    cat_rows.append(
        [
            f"mean of {len(names)}",
            *[
                " / ".join(
                    [_fmt(ours_summary[c]), *[_fmt(published_summary.get(p, {}).get(c)) for p in PUBLISHED]]
                )
                for c in CATEGORIES
            ],
        ]
    )
    print_table(["repository", *CATEGORIES], cat_rows)
    return {
        "code": _code_revision(),
        "mode": args.mode,
        "fast_tier": args.fast_tier,
        "embedding_model": args.embedding_model or Settings.model_fields["embedding_model"].default,
        "data": str(args.data),
        "repositories": names,
        "summary": {"ours": ours_summary, **published_summary},
        "index": {
            "units": total_units,
            "seconds": total_s,
            "complete_seconds": total_complete_s,
            "peak_worker_rss_mib": peak_rss,
        },
        "per_repo": ours,
    }


def _code_revision() -> str:
    """The commit measured, "+changes" when the tree differs from it: figures move with the ranking code."""

    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), *argv], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.repos_dir is None:
        raise BenchError(
            "--repos-dir is required: a folder with each repository of repos.json checked out at its "
            "revision in a sub-folder named after it (see docs/benchmarks.md)"
        )
    repos, published = load_data(args.data)
    selected = select(repos, args.repos)
    # Every checkout checked before the first (long) index, so a missing one fails at once.
    roots = {spec["name"]: _checkout_root(args.repos_dir.resolve(), spec) for spec in selected}
    ours: dict[str, dict[str, Any]] = {}
    for spec in selected:
        queries = annotated_queries(args.data, spec["name"])
        if args.workdir is not None:
            kept = args.workdir.resolve() / spec["name"]
            kept.mkdir(parents=True, exist_ok=True)
            ours[spec["name"]] = await _run_repo(args, spec, roots[spec["name"]], queries, kept)
        else:
            tmp = Path(tempfile.mkdtemp(prefix=f"lms-bench-semble-{spec['name']}-"))
            try:
                ours[spec["name"]] = await _run_repo(args, spec, roots[spec["name"]], queries, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        progress(f"semble: {spec['name']}: NDCG@10 {ours[spec['name']]['ndcg10']:.3f}")
    return _report(args, ours, published)
