"""Ranking work in seconds: both quality sets re-scored in-process over indexes kept by earlier runs.

A ranking change is kept only when it helps both the public benchmark and our own labelled
questions, and each full benchmark run re-indexes. This one indexes nothing: it opens the data
folders kept by ``bench semble --workdir S`` and ``bench code_quality --workdir Q`` (their workers
stopped), runs the search room's own code in this process on every query (``--mode``: see
``bench.search_modes``), and prints both figures: semble's NDCG@10 per category and our MRR@10.
``--baseline`` takes an earlier run's JSON and lists the queries that moved. A change to what is
indexed (unit texts, keyword rows) needs the full benchmarks again, or ``--reindex``.
``--per-package`` asks our sets of each package indexed as its own project, as a user who indexed
that package would: rules that depend on the project (its name) act there, and the BM25
statistics are the package's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path, PurePosixPath
from typing import Any

from bench import code_bindings
from bench.code_quality import PROJECT as QUALITY_PROJECT
from bench.code_quality import answer_rank, labelled_queries, mrr_figures
from bench.common import BenchError, print_table, progress
from bench.search_modes import MODES, open_services, search
from bench.semble_data import (
    CATEGORIES,
    DEFAULT_DATA,
    annotated_queries,
    hits_of,
    load_data,
    mean,
    mean_by_category,
    ndcg_at_10,
    select,
    target_rank,
)

K = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--semble-work", type=Path, default=None, help="the --workdir of a bench semble run")
    parser.add_argument(
        "--quality-work", type=Path, default=None, help="the --workdir of a bench code_quality run"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="semble's benchmark data")
    parser.add_argument(
        "--repos", default=None, help="comma-separated semble repositories (default: all kept)"
    )
    parser.add_argument("--mode", choices=MODES, default="hybrid")
    parser.add_argument(
        "--fast-tier", action="store_true", help="as search_code answers before any vector (no dense side)"
    )
    parser.add_argument(
        "--per-package",
        action="store_true",
        help="our sets with each package indexed as its own project (the kept corpus, into "
        "QUALITY_WORK/packages-data on first use) and each query asked of its package",
    )
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a reranking weight changed for this run (worker.code.search.ranking.weights), e.g. "
        "path_word=0 to measure what that rule buys; repeatable",
    )
    parser.add_argument(
        "--fusion",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a fusion setting changed for this run (rrf_k, lexical_weight, candidates: "
        "worker.code.search.hybrid.Fusion); repeatable",
    )
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier ranking.json to compare with")
    parser.add_argument(
        "--reindex",
        type=Path,
        default=None,
        metavar="REPOS_DIR",
        help="first index each project again from scratch (semble's checkouts in REPOS_DIR, the quality "
        "corpus in its workdir), for a change to what is indexed; vectors of unchanged texts come "
        "from the embedding cache",
    )


async def _search_all(
    data_dir: Path,
    asked: list[tuple[str, str]],
    args: argparse.Namespace,
    roots: dict[str, Path] | None = None,
) -> list[Any]:
    """The search room's answers to each (query, project) of ``asked`` in ``args.mode``, after
    indexing each project of ``roots`` again from its folder when given."""
    from learning_memory.worker.code.search.hybrid import FUSION
    from learning_memory.worker.code.search.ranking.weights import DEFAULT

    weights = _changed(DEFAULT, args.weight, "--weight")
    fusion = _changed(FUSION, args.fusion, "--fusion")
    services = open_services(data_dir, fast_tier=args.fast_tier)
    try:
        for project, root in (roots or {}).items():
            await _reindex(services, root, project)
        return [
            [
                hit.model_dump()
                for hit in await search(
                    services, query, project=project, limit=K, mode=args.mode, weights=weights, fusion=fusion
                )
            ]
            for query, project in asked
        ]
    finally:
        await services.close()


def _changed(defaults: Any, changes: list[str], flag: str) -> Any:
    """``defaults`` (a frozen dataclass of settings) with ``changes`` (NAME=VALUE) applied."""
    from dataclasses import fields, replace

    types = {field.name: field.type for field in fields(defaults)}
    values: dict[str, Any] = {}
    for change in changes:
        name, _, value = change.partition("=")
        if name not in types or not value:
            raise BenchError(f"{flag} {change!r}: give NAME=VALUE, NAME one of {', '.join(sorted(types))}")
        values[name] = int(value) if types[name] in (int, "int") else float(value)
    return replace(defaults, **values)


async def _reindex(services: Any, root: Path, project: str) -> None:
    from learning_memory.shared.contracts.code import DeleteProjectRequest, IndexCodebaseRequest
    from learning_memory.worker.jobs.code import delete_project_index, index_codebase
    from learning_memory.worker.services import JobRun

    job_run = JobRun(services, job_id="bench-ranking", job_try=1)
    await delete_project_index(job_run, DeleteProjectRequest(project=project))
    await index_codebase(job_run, IndexCodebaseRequest(directory=str(root), project=project))
    filler = services.vector_filler()
    if filler is not None:
        await filler.wait_idle(timeout_s=3600)


async def _semble(args: argparse.Namespace) -> dict[str, Any]:
    repos, _ = load_data(args.data)
    kept = [spec for spec in select(repos, args.repos) if (args.semble_work / spec["name"] / "data").is_dir()]
    if not kept:
        raise BenchError(f"no kept index under {args.semble_work}: run bench semble --workdir there first")
    out: dict[str, Any] = {}
    for spec in kept:
        name = spec["name"]
        queries = annotated_queries(args.data, name)
        root = None
        if args.reindex is not None:
            checkout = args.reindex / name
            root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        found = await _search_all(
            args.semble_work / name / "data",
            [(q.text, name) for q in queries],
            args,
            None if root is None else {name: root},
        )
        per_query: list[dict[str, Any]] = []
        for query, hits_found in zip(queries, found, strict=True):
            hits = hits_of(hits_found, spec.get("benchmark_root"))
            per_query.append(
                {
                    "query": query.text,
                    "category": query.category,
                    "ndcg10": ndcg_at_10(hits, query.targets),
                    "target_ranks": [target_rank(hits, t) for t in query.targets],
                    "top": [f"{h.path}:{h.start_line}-{h.end_line}" for h in hits],
                }
            )
        out[name] = {
            "ndcg10": mean(q["ndcg10"] for q in per_query),
            "by_category": {
                c: mean(q["ndcg10"] for q in per_query if q["category"] == c)
                for c in CATEGORIES
                if any(q["category"] == c for q in per_query)
            },
            "queries": per_query,
        }
        progress(f"ranking: {name}: NDCG@10 {out[name]['ndcg10']:.3f}")
    return out


async def _ours(args: argparse.Namespace) -> dict[str, Any]:
    labelled = labelled_queries()
    corpus = args.quality_work / "corpus"
    kept_corpus = corpus.is_dir()
    bound = code_bindings.labelled(corpus) if kept_corpus else []
    items = [*labelled, *bound]
    # One pass over the index for both sets: each pass opens the worker's services and model.
    if args.per_package:
        if not kept_corpus:
            raise BenchError(f"no kept corpus at {corpus}: run bench code_quality --workdir there first")
        found = await _per_package(args, corpus, items)
    else:
        data_dir = args.quality_work / "data"
        if not data_dir.is_dir():
            raise BenchError(f"no kept index at {data_dir}: run bench code_quality --workdir there first")
        roots = {QUALITY_PROJECT: corpus} if args.reindex is not None else None
        found = await _search_all(data_dir, [(item["query"], QUALITY_PROJECT) for item in items], args, roots)
    per_query = [
        {
            "query": item["query"],
            "kind": item.get("kind", "question"),
            "rank": answer_rank(hits, item["answers"]),
            "top": _top(hits),
        }
        for item, hits in zip(labelled, found[: len(labelled)], strict=True)
    ]
    out = {
        kind: {
            **mrr_figures([q["rank"] for q in per_query if q["kind"] == kind]),
            "queries": [q for q in per_query if q["kind"] == kind],
        }
        for kind in ("question", "symbol")
    }
    if bound:
        queries = [
            {"query": item["query"], "rank": code_bindings.file_rank(hits, item["file"]), "top": _top(hits)}
            for item, hits in zip(bound, found[len(labelled) :], strict=True)
        ]
        out["binding"] = {**mrr_figures([q["rank"] for q in queries]), "queries": queries}
    return out


async def _per_package(args: argparse.Namespace, corpus: Path, items: list[dict[str, Any]]) -> list[Any]:
    """Each item asked of its own package's project, as a user who indexed that package alone would:
    the project is the first folder of the answer's file. Indexed into ``packages-data`` beside
    the kept index on first use (or again with --reindex); the hits' paths get the package's folder
    back, so that the labels match."""
    data_dir = args.quality_work / "packages-data"
    packages = sorted({_package(item) for item in items})
    roots = None
    if args.reindex is not None or not data_dir.is_dir():
        roots = {package: corpus / package for package in packages}
    asked = [(item["query"], _package(item)) for item in items]
    found = await _search_all(data_dir, asked, args, roots)
    return [
        [{**hit, "file_path": f"{project}/{hit['file_path']}"} for hit in hits]
        for (_, project), hits in zip(asked, found, strict=True)
    ]


def _package(item: dict[str, Any]) -> str:
    path = item["answers"][0]["file"] if "answers" in item else item["file"]
    return str(PurePosixPath(path).parts[0])


def _top(hits: list[dict[str, Any]]) -> list[str]:
    return [f"{h['file_path']}:{h['qualified_name']}" for h in hits]


def _moved(now: dict[str, Any], before: dict[str, Any]) -> list[list[str]]:
    """Queries whose figure changed against the baseline, worst loss first."""
    rows: list[tuple[float, list[str]]] = []
    for name, repo in now.get("semble", {}).items():
        old = {q["query"]: q for q in before.get("semble", {}).get(name, {}).get("queries", [])}
        for q in repo["queries"]:
            if q["query"] in old and abs(q["ndcg10"] - old[q["query"]]["ndcg10"]) > 1e-9:
                delta = q["ndcg10"] - old[q["query"]]["ndcg10"]
                rows.append((delta, [name, q["category"], q["query"][:70], f"{delta:+.3f}"]))
    for kind, result in now.get("ours", {}).items():
        old = {q["query"]: q for q in before.get("ours", {}).get(kind, {}).get("queries", [])}
        for q in result["queries"]:
            if q["query"] in old and q["rank"] != old[q["query"]]["rank"]:
                delta = (1 / q["rank"] if q["rank"] else 0.0) - (
                    1 / old[q["query"]]["rank"] if old[q["query"]]["rank"] else 0.0
                )
                rows.append((delta, ["ours", kind, q["query"][:70], f"{delta:+.3f} (rr)"]))
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.semble_work is None and args.quality_work is None:
        raise BenchError("give --semble-work and/or --quality-work (kept indexes of earlier runs)")
    result: dict[str, Any] = {
        "mode": args.mode,
        "fast_tier": args.fast_tier,
        "per_package": args.per_package,
        "weights": args.weight,
        "fusion": args.fusion,
    }
    rows: list[list[str]] = []
    if args.semble_work is not None:
        result["semble"] = await _semble(args)
        summary = result["semble_summary"] = mean_by_category(result["semble"])
        rows.append(["semble NDCG@10", *(f"{summary[c]:.3f}" for c in ("all", *CATEGORIES))])
    if args.quality_work is not None:
        result["ours"] = await _ours(args)
        rows.append(
            [
                "ours MRR@10",
                f"{result['ours']['question']['mrr_at_10']:.3f}",
                "",
                "",
                f"{result['ours']['symbol']['mrr_at_10']:.3f}",
            ]
        )
        if "binding" in result["ours"]:
            rows.append(
                [
                    "ours module-level names MRR@10",
                    "",
                    "",
                    "",
                    f"{result['ours']['binding']['mrr_at_10']:.3f}",
                ]
            )
    print_table(["set", "all / questions", *CATEGORIES], rows)
    if args.baseline is not None:
        before = json.loads(args.baseline.read_text())
        before = before.get("results", before)
        moved = _moved(result, before)
        print_table(["set", "kind", "query", "change"], moved or [["", "", "nothing moved", ""]])
    return result
