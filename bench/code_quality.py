"""Code search quality: MRR@10 on labelled questions, per retrieval mode; snippet truncation.

Corpus: six installed packages (httpx, httpcore, structlog, GitPython, arq, click), indexed through
a real MCP client over stdio by a real worker (arq mode). ``bench/data/code_queries.json`` holds
60 questions a developer would ask, each answered by one function (or either of two twins), written
without the answer's own name in most of them. Every question runs in the four modes of
``bench.search_modes`` (hybrid = what search_code does; fused = its candidates without the
reordering; semantic = dense vectors alone; lexical = BM25 alone), in this process over the index
once the worker has stopped, and reports MRR@10, hit@1 and hit@10; search_code's latency over
stdio is measured on the same questions.

For find_similar_code: units of the corpus (8 lines or more) are pasted whole as snippets into
the tool, over stdio, and how often the unit itself comes first is counted, with the tool's
latency. The tool compares a snippet by its first ``MAX_SNIPPET_EMBED_TOKENS`` tokens; what that
cut costs is measured apart: the same units cut at several lengths, embedded by the worker's model
(ONNX Runtime) and compared with every unit's vector from the worker's embedding cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from mcp import Client

from bench.code import call_tool, copy_corpus, corpus_units, index_project
from bench.common import latency_summary_ms, print_table, progress
from bench.processes import serving
from bench.search_modes import Mode, open_services, search
from learning_memory.shared.contracts.code import CodeUnit

CORPUS = ("httpx", "httpcore", "structlog", "git", "arq", "click")
QUERIES = Path(__file__).parent / "data" / "code_queries.json"
PROJECT = "quality"
# The other fusions re-fuse the plain semantic and lexical lists, as deep as a request may ask.
FUSION_DEPTH = 50
MODES: tuple[Mode, ...] = ("hybrid", "fused", "semantic", "lexical")
SNIPPET_CUTS = (250, 500, 1000, 4000)
FUSION_KS = (5, 10, 30, 60)
FUSION_WEIGHTS = (1.0, 1.5, 2.0, 3.0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snippets", type=int, default=150, help="units pasted as snippets (150)")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep corpus and index here, reuse them next run"
    )
    parser.add_argument(
        "--embedding-model",
        default=None,
        help="LMS_EMBEDDING_MODEL for the worker (default: the bundled model)",
    )
    parser.add_argument(
        "--fast-tier",
        action="store_true",
        help="LMS_CODE_VECTORS=false: search_code as it answers before any vector is filled in",
    )


def labelled_queries() -> list[dict[str, Any]]:
    return list(json.loads(QUERIES.read_text()))


def _is_answer(hit: dict[str, Any], answers: list[dict[str, str]]) -> bool:
    return any(
        hit["file_path"] == answer["file"] and hit["qualified_name"] == answer["qualified_name"]
        for answer in answers
    )


def answer_rank(hits: list[dict[str, Any]], answers: list[dict[str, str]]) -> int | None:
    return next((i for i, hit in enumerate(hits, start=1) if _is_answer(hit, answers)), None)


def mrr_figures(ranks: list[int | None]) -> dict[str, float]:
    return {
        "mrr_at_10": sum(1 / rank for rank in ranks if rank is not None and rank <= 10) / len(ranks),
        "hit_at_1": sum(1 for rank in ranks if rank == 1) / len(ranks),
        "hit_at_10": sum(1 for rank in ranks if rank is not None and rank <= 10) / len(ranks),
    }


async def _modes(
    args: argparse.Namespace, data_dir: Path, labelled: list[dict[str, Any]]
) -> tuple[dict[str, list[int | None]], dict[str, list[list[tuple[str, str, str]]]]]:
    """The answer's rank per question in each mode, and each side's top 50 to try other fusions on."""
    services = open_services(data_dir, fast_tier=args.fast_tier, embedding_model=args.embedding_model)
    ranks: dict[str, list[int | None]] = {mode: [] for mode in MODES}
    lists: dict[str, list[list[tuple[str, str, str]]]] = {"semantic": [], "lexical": []}
    try:
        for item in labelled:
            for mode in MODES:
                limit = 10 if mode in ("hybrid", "fused") else FUSION_DEPTH
                found = await search(services, item["query"], project=PROJECT, limit=limit, mode=mode)
                hits = [hit.model_dump() for hit in found]
                ranks[mode].append(answer_rank(hits[:10], item["answers"]))
                if mode in lists:
                    lists[mode].append([(hit["id"], hit["file_path"], hit["qualified_name"]) for hit in hits])
    finally:
        await services.close()
    return ranks, lists


def _fusions(
    labelled: list[dict[str, Any]], lists: dict[str, list[list[tuple[str, str, str]]]]
) -> dict[str, float]:
    """MRR@10 of other fusions of the same two lists: RRF constants and a weight on the BM25 side."""
    out: dict[str, float] = {}
    for k in FUSION_KS:
        for weight in FUSION_WEIGHTS:
            found: list[int | None] = []
            for i, item in enumerate(labelled):
                fused: dict[str, float] = {}
                names: dict[str, dict[str, str]] = {}
                for side, w in (("semantic", 1.0), ("lexical", weight)):
                    for rank, (pid, file_path, name) in enumerate(lists[side][i], start=1):
                        fused[pid] = fused.get(pid, 0.0) + w / (k + rank)
                        names[pid] = {"file_path": file_path, "qualified_name": name}
                top = sorted(fused, key=lambda pid: fused[pid], reverse=True)[:10]
                found.append(answer_rank([names[pid] for pid in top], item["answers"]))
            out[f"rrf k={k} bm25 weight={weight}"] = mrr_figures(found)["mrr_at_10"]
    return out


async def _similar(client: Client, corpus: Path, count: int) -> dict[str, Any]:
    """find_similar_code with units pasted whole: how often the unit itself comes first, latency."""
    units = await asyncio.to_thread(corpus_units, corpus, PROJECT)
    firsts, seconds = 0, []
    for file_path, qualified_name, body in _snippets(units, count):
        started = time.perf_counter()
        found = await call_tool(
            client, "find_similar_code", {"snippet": body, "project": PROJECT, "limit": 5}
        )
        seconds.append(time.perf_counter() - started)
        hits = found["results"]
        firsts += int(
            bool(hits) and _is_answer(hits[0], [{"file": file_path, "qualified_name": qualified_name}])
        )
    return {
        "snippets": len(seconds),
        "self_at_1": firsts / max(1, len(seconds)),
        **latency_summary_ms(seconds),
    }


def _snippets(units: list[CodeUnit], count: int) -> list[tuple[str, str, str]]:
    """(file_path, qualified_name, body) of ``count`` random units of 8 lines or more."""
    long = [u for u in units if u.line_count >= 8 and u.unit_type != "module"]
    chosen = random.Random(7).sample(long, min(count, len(long)))
    return [(u.file_path, u.qualified_name, u.body) for u in chosen]


async def _snippet_cuts(data_dir: Path, corpus: Path, count: int) -> dict[str, dict[str, float]]:
    """Self-retrieval@1 and model time per cut, against every unit's vector from the cache."""
    from learning_memory.shared.paths import default_models_dir
    from learning_memory.worker.code.index.units import embedding_text
    from learning_memory.worker.embedding.cache import CachingEmbedder
    from learning_memory.worker.embedding.onnx_embedder import OnnxEmbedder
    from learning_memory.worker.metadata.store import MetadataStore

    units = await asyncio.to_thread(corpus_units, corpus, PROJECT)
    keys = [(u.file_path, u.qualified_name) for u in units]
    texts = [embedding_text(u) for u in units]
    # serving() leaves LMS_* out of the worker's environment: it used the default models folder.
    model = await OnnxEmbedder.open("all-MiniLM-L6-v2", default_models_dir())
    store = await MetadataStore.open(data_dir / "metadata.sqlite3")
    try:
        matrix = await CachingEmbedder(model, store).embed(texts)
    finally:
        await store.close()
    position = {key: i for i, key in enumerate(keys)}
    snippets = _snippets(units, count)
    results: dict[str, dict[str, float]] = {}
    for cut in SNIPPET_CUTS:
        firsts, seconds = 0, []
        for file_path, qualified_name, body in snippets:
            started = time.perf_counter()
            vector = (await model.embed([body[:cut]]))[0]
            seconds.append(time.perf_counter() - started)
            best = int(np.argmax(matrix @ vector))
            firsts += int(best == position.get((file_path, qualified_name)))
        results[str(cut)] = {"self_at_1": firsts / len(snippets), **latency_summary_ms(seconds)}
    return results


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    corpus = tmp / "corpus"
    if corpus.exists():
        files = sum(1 for _ in corpus.rglob("*.py"))
    else:
        files = await asyncio.to_thread(copy_corpus, CORPUS, corpus)
    labelled = labelled_queries()
    progress(f"code_quality: corpus {', '.join(CORPUS)}: {files} .py files, {len(labelled)} questions")
    namespace = f"bench-quality-{time.time_ns()}"
    extra = {"LMS_EMBEDDING_MODEL": args.embedding_model} if args.embedding_model else {}
    if args.fast_tier:
        extra["LMS_CODE_VECTORS"] = "false"
    async with serving(args.redis_url, tmp, namespace, extra_env=extra) as (client, _worker):
        stats, seconds = await index_project(client, corpus, PROJECT)
        projects = (await call_tool(client, "list_indexed_projects", {}))["projects"]
        units = next(p["units"] for p in projects if p["project"] == PROJECT)
        progress(f"code_quality: {units} units, {stats['units_indexed']} indexed in {seconds:.0f}s")
        # Each question made new to the embedding cache (a reused --workdir keeps earlier runs').
        latencies = []
        for item in labelled:
            query = f"{item['query']} ({namespace})"
            started = time.perf_counter()
            await call_tool(client, "search_code", {"query": query, "project": PROJECT})
            latencies.append(time.perf_counter() - started)
        similar = await _similar(client, corpus, args.snippets) if args.snippets else {}
    # In this process once the worker has stopped: the baselines are no job of the worker's.
    ranks, lists = await _modes(args, tmp / "data", labelled)
    cuts = await _snippet_cuts(tmp / "data", corpus, args.snippets) if args.snippets else {}
    kinds = [item.get("kind", "question") for item in labelled]
    questions = [item for item in labelled if item.get("kind", "question") == "question"]
    question_lists = {
        side: [ls for ls, kind in zip(found, kinds, strict=True) if kind == "question"]
        for side, found in lists.items()
    }
    fusions = _fusions(questions, question_lists)
    return _report(files, units, ranks, kinds, fusions, latencies, cuts, similar)


def _report(
    files: int,
    units: int,
    ranks: dict[str, list[int | None]],
    kinds: list[str],
    fusions: dict[str, float],
    latencies: list[float],
    cuts: dict[str, dict[str, float]],
    similar: dict[str, Any],
) -> dict[str, Any]:
    def of(kind: str, found: list[int | None]) -> list[int | None]:
        return [rank for rank, k in zip(found, kinds, strict=True) if k == kind]

    # Questions and symbol queries apart: the question figures stay comparable with earlier runs.
    quality = {mode: mrr_figures(of("question", found)) for mode, found in ranks.items()}
    symbols = {mode: mrr_figures(of("symbol", found)) for mode, found in ranks.items()}
    notes = {"hybrid": " (search_code)", "fused": " (no reordering)"}
    rows = [
        [
            f"{mode}{notes.get(mode, '')}",
            f"{q['mrr_at_10']:.3f}",
            f"{q['hit_at_1']:.0%}",
            f"{q['hit_at_10']:.0%}",
            f"{symbols[mode]['mrr_at_10']:.3f}",
            f"{symbols[mode]['hit_at_1']:.0%}",
        ]
        for mode, q in quality.items()
    ]
    print_table(["mode", "questions MRR@10", "hit@1", "hit@10", "symbols MRR@10", "symbols hit@1"], rows)
    print_table(
        ["other fusions of the same lists", "MRR@10"], [[name, f"{v:.3f}"] for name, v in fusions.items()]
    )
    search = latency_summary_ms(latencies)
    print_table(
        ["measure", "value"],
        [
            [
                f"search_code over stdio ({units} units)",
                f"p50 {search['p50_ms']:.1f} / p95 {search['p95_ms']:.1f} ms",
            ]
        ]
        + (
            [
                [
                    f"find_similar_code, {similar['snippets']} units pasted whole: the unit first",
                    f"{similar['self_at_1']:.0%}"
                    f" (p50 {similar['p50_ms']:.1f} / p95 {similar['p95_ms']:.1f} ms)",
                ]
            ]
            if similar
            else []
        ),
    )
    print_table(
        ["snippet cut (chars)", "unit itself first", "model p50", "model p95"],
        [
            [cut, f"{r['self_at_1']:.0%}", f"{r['p50_ms']:.1f} ms", f"{r['p95_ms']:.1f} ms"]
            for cut, r in cuts.items()
        ],
    )
    return {
        "corpus": list(CORPUS),
        "files": files,
        "units": units,
        "questions": len(next(iter(ranks.values()))),
        "quality": quality,
        "quality_symbols": symbols,
        "ranks": ranks,
        "other_fusions_mrr_at_10": fusions,
        "search_code": search,
        "snippet_cuts": cuts,
        "find_similar_code": similar,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return await _run_in(args, args.workdir.resolve())
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-quality-"))
    try:
        return await _run_in(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
