"""Code indexing and search on a fixed corpus of real files from installed packages.

Corpus: the ``networkx`` and ``pip`` packages as installed in the venv (1,000+ Python files),
copied to a temporary folder so one can be edited. Through a real MCP client over stdio, arq
mode, a real worker with the real model: the worker's resident memory once it has started and
served a few memory calls; a cold index (files/s, units/s, the worker's peak RSS) against the
model's own throughput on a sample of the same units, measured in this run; a re-index with
nothing changed; a re-index after editing one file; then, with more packages indexed until at
least ``--min-units`` units are stored, search_code and find_similar_code; last, the model alone
on each find_similar_code snippet's head.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from mcp import Client

from bench.common import BenchError, latency_summary_ms, print_table, progress
from bench.processes import serving
from learning_memory.shared.contracts.code import CodeUnit

CORPUS = ("networkx", "pip")
EXTRA = ("mypy", "setuptools", "hypothesis", "sympy")  # indexed only to reach --min-units
TARGETS = {
    "overhead_pct": 15.0,
    "unchanged_s": 2.0,
    "search_p95_ms": 30.0,
    "similar_p95_ms": 50.0,
    "searchable_s": 20.0,
    "fast_units_per_s": 1000.0,
    # Issue 14: a worker without torch.
    "idle_rss_mib": 400.0,
    "peak_rss_mib": 1024.0,
}
QUERIES = [
    "shortest path between two nodes",
    "parse a requirement specifier",
    "download a file with retries",
    "check if a graph is connected",
    "compute the pagerank of nodes",
    "read a wheel's metadata",
    "topological sort of a directed graph",
    "resolve dependencies between packages",
    "build a minimum spanning tree",
    "normalize a version string",
    "cache an http response",
    "find cycles in a graph",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=200, help="timed searches per tool (200)")
    parser.add_argument(
        "--min-units", type=int, default=40_000, help="units indexed before searching (40000)"
    )
    parser.add_argument(
        "--sample", type=int, default=2_000, help="units embedded to time the model alone (2000)"
    )


def _site_packages() -> Path:
    spec = importlib.util.find_spec(CORPUS[0])
    if spec is None or spec.origin is None:
        raise BenchError(f"the corpus package {CORPUS[0]} is not installed")
    return Path(spec.origin).resolve().parent.parent


def copy_corpus(packages: tuple[str, ...], target: Path) -> int:
    source = _site_packages()
    for name in packages:
        shutil.copytree(source / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return sum(1 for _ in target.rglob("*.py"))


async def call_tool(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    from learning_memory.cli.client import result_payload

    result = await client.call_tool(tool, arguments, read_timeout_seconds=7200)
    if result.is_error:
        raise BenchError(f"{tool} failed: {result.content}")
    return result_payload(result)


async def index_project(
    client: Client, directory: Path, project: str, probe: str | None = None
) -> tuple[dict[str, Any], float]:
    """Index and wait until every unit has its vector (following the job id once the tool's wait
    budget runs out); the seconds to that point. When the project became searchable (the tool's
    answer) is in the answer's ``searchable_s``; with ``probe``, search_code is asked that at once,
    and when it answered (and with how many hits) is in ``probe_s`` and ``probe_hits``."""
    started = time.perf_counter()
    answer = await call_tool(client, "index_codebase", {"directory": str(directory), "project": project})
    while answer.get("status") == "running":
        await asyncio.sleep(0.5)
        status = await call_tool(client, "get_job_status", {"job_id": answer["job_id"]})
        if status["state"] == "failed":
            raise BenchError(f"indexing failed: {status.get('error')}")
        if status["state"] == "complete":
            answer = status["result"]
    answer = {**answer, "searchable_s": time.perf_counter() - started}
    if probe is not None:
        found = await call_tool(client, "search_code", {"query": probe, "project": project})
        answer |= {"probe_s": time.perf_counter() - started, "probe_hits": found["count"]}
    while answer.get("vectors_pending"):
        await asyncio.sleep(0.2)
        listed = (await call_tool(client, "list_indexed_projects", {}))["projects"]
        answer["vectors_pending"] = next((p["vectors_pending"] for p in listed if p["project"] == project), 0)
    return answer, time.perf_counter() - started


def peak_rss_mib(pid: int, field: str = "VmHWM") -> float | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return None


async def _idle_rss_mib(client: Client, pid: int) -> float | None:
    """The worker's resident memory once it has served a few memory calls (the model loaded)."""
    for i in range(3):
        await call_tool(
            client, "store_memory", {"content": f"The bench stored note {i}.", "category": "fact"}
        )
        await call_tool(client, "retrieve_memories", {"query": f"what did the bench store ({i})?"})
    return peak_rss_mib(pid, "VmRSS")


def corpus_units(corpus: Path, project: str = "bench") -> list[CodeUnit]:
    """Every unit of the corpus's Python files, parsed as the indexer parses them."""
    from learning_memory.worker.code.index.parser import language_for, parse_source

    units: list[CodeUnit] = []
    for path in sorted(corpus.rglob("*.py")):
        rel = PurePosixPath(path.relative_to(corpus).as_posix())
        language = language_for(rel)
        if language is not None:
            parsed = parse_source(path.read_bytes(), language=language, project=project, file_path=str(rel))
            units += parsed.units
    return units


def _unit_texts(corpus: Path) -> list[str]:
    """The embedding texts of every unit in the corpus, as the indexer builds them."""
    from learning_memory.worker.code.index.units import embedding_text

    return [embedding_text(unit) for unit in corpus_units(corpus)]


async def _model_alone(
    corpus: Path, sample: int, snippets: list[str]
) -> tuple[float, int, dict[str, list[float]]]:
    """The model alone, as the worker runs it (ONNX Runtime, the export the worker uses): units/s
    on a random sample of the corpus's unit texts in the pipeline's batch size, and the seconds
    one snippet's head takes."""
    from learning_memory.shared.paths import default_models_dir
    from learning_memory.worker.code.index.filler import BATCH as EMBED_BATCH
    from learning_memory.worker.code.search.query import query_text
    from learning_memory.worker.code.search.similar import MAX_SNIPPET_EMBED_TOKENS
    from learning_memory.worker.embedding.onnx_embedder import OnnxEmbedder

    texts = await asyncio.to_thread(_unit_texts, corpus)
    chosen = random.Random(5).sample(texts, min(sample, len(texts)))
    # serving() leaves LMS_* out of the worker's environment: it uses the default models folder.
    model = await OnnxEmbedder.open("all-MiniLM-L6-v2", default_models_dir())
    await model.embed(chosen[:EMBED_BATCH])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(chosen), EMBED_BATCH):
        await model.embed(chosen[start : start + EMBED_BATCH])
    rate = len(chosen) / (time.perf_counter() - started)
    heads = [model.head(query_text(snippet), MAX_SNIPPET_EMBED_TOKENS) for snippet in snippets]
    per_head: dict[str, list[float]] = {"onnx": []}
    for head in heads:
        started = time.perf_counter()
        await model.embed([head])
        per_head["onnx"].append(time.perf_counter() - started)
    return rate, len(chosen), per_head


async def _searches(client: Client, calls: int, snippets: list[str]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"search_code": [], "find_similar_code": []}
    for i in range(calls):
        for tool, arguments in (
            ("search_code", {"query": f"{QUERIES[i % len(QUERIES)]} ({i})"}),
            # The mark goes first: find_similar_code embeds a snippet's head, and each call must be new.
            ("find_similar_code", {"snippet": f"# {i}\n" + snippets[i % len(snippets)]}),
        ):
            started = time.perf_counter()
            await call_tool(client, tool, arguments)
            samples[tool].append(time.perf_counter() - started)
    return samples


async def _searches_during(client: Client, indexing: asyncio.Task[Any], calls: int) -> list[float]:
    """search_code latencies while ``indexing`` runs on the batch queue (new queries each time)."""
    samples: list[float] = []
    while not indexing.done() and len(samples) < calls:
        started = time.perf_counter()
        await call_tool(
            client, "search_code", {"query": f"{QUERIES[len(samples) % len(QUERIES)]} [{len(samples)}]"}
        )
        samples.append(time.perf_counter() - started)
    return samples


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    corpus = tmp / "corpus"
    files = await asyncio.to_thread(copy_corpus, CORPUS, corpus)
    progress(f"code: corpus {', '.join(CORPUS)}: {files} .py files")
    async with serving(args.redis_url, tmp) as (client, worker):
        idle_rss = await _idle_rss_mib(client, worker.pid)
        # Load the model first (a search on an empty index would not): the cold index is timed warm.
        warm = tmp / "warm-up"
        warm.mkdir()
        (warm / "warm.py").write_text("def warm_up():\n    return 1\n")
        await index_project(client, warm, "warm-up")
        await call_tool(client, "delete_project_index", {"project": "warm-up"})
        cold, cold_s = await index_project(client, corpus, "corpus", probe=QUERIES[0])
        peak_rss = peak_rss_mib(worker.pid)
        progress(f"code: cold index {cold_s:.1f}s, {cold['units_indexed']} units")
        unchanged, unchanged_s = await index_project(client, corpus, "corpus")
        edited = corpus / "networkx" / "utils" / "misc.py"
        edited.write_text(edited.read_text() + "\n\ndef bench_added(x):\n    return x + 1\n")
        one_file, one_file_s = await index_project(client, corpus, "corpus")
        units = cold["units_indexed"]
        during: list[float] = []
        for name in EXTRA:
            if units >= args.min_units:
                break
            extra = tmp / "extra" / name
            await asyncio.to_thread(copy_corpus, (name,), extra)
            indexing = asyncio.create_task(index_project(client, extra, f"extra-{name}"))
            if not during:  # searches while the first extra package is being indexed
                during = await _searches_during(client, indexing, args.calls)
            stats, _ = await indexing
            units += stats["units_indexed"]
            progress(f"code: + {name}: {units} units")
        snippets = [path.read_text()[:600] for path in sorted(corpus.rglob("*.py"))[:50]]
        samples = await _searches(client, args.calls, snippets)
    # The same snippets find_similar_code was timed with, its mark first.
    marked = [f"# {i}\n" + snippets[i % len(snippets)] for i in range(args.calls)]
    model_rate, sampled, per_head = await _model_alone(corpus, args.sample, marked)
    return _report(
        {
            "files": files,
            "cold": cold,
            "cold_s": cold_s,
            "peak_rss": peak_rss,
            "idle_rss": idle_rss,
            "unchanged": unchanged,
            "unchanged_s": unchanged_s,
            "one_file": one_file,
            "one_file_s": one_file_s,
            "units": units,
            "samples": samples,
            "during": during,
            "model_rate": model_rate,
            "sampled": sampled,
            "per_head": per_head,
        }
    )


def _report(run: dict[str, Any]) -> dict[str, Any]:
    cold, cold_s = run["cold"], run["cold_s"]
    searchable_s = cold["searchable_s"]
    fast_rate = cold["units_indexed"] / searchable_s
    # The vectors are filled in after the project is searchable: that stretch is the model's.
    pipeline_rate = cold["units_indexed"] / max(1e-9, cold_s - searchable_s)
    overhead = (run["model_rate"] / pipeline_rate - 1) * 100
    searches = {tool: latency_summary_ms(values) for tool, values in run["samples"].items()}
    rows = [
        [
            "cold index: searchable (index_codebase answered)",
            f"{cold['files_indexed']} files, {cold['units_indexed']} units in {searchable_s:.1f}s",
            f"{cold['files_indexed'] / searchable_s:.1f} files/s, {fast_rate:.0f} units/s",
            f"≤ {TARGETS['searchable_s']:.0f}s, ≥ {TARGETS['fast_units_per_s']:.0f} units/s",
        ],
        [
            "cold index: first search_code answered",
            f"{cold['probe_s']:.1f}s after the start",
            f"{cold['probe_hits']} hits",
            f"≤ {TARGETS['searchable_s']:.0f}s",
        ],
        [
            "cold index: every vector filled in",
            f"{cold_s:.1f}s after the start",
            f"{pipeline_rate:.1f} units/s",
            "",
        ],
        ["model alone, same units", f"{run['sampled']} units", f"{run['model_rate']:.1f} units/s", ""],
        ["vector fill overhead", f"{overhead:.1f}%", "", f"≤ {TARGETS['overhead_pct']:.0f}%"],
        [
            "re-index, nothing changed",
            f"{run['unchanged_s']:.2f}s",
            f"{run['unchanged']['files_unchanged']} unchanged",
            f"≤ {TARGETS['unchanged_s']:.0f}s",
        ],
        [
            "re-index, one file edited",
            f"{run['one_file_s']:.2f}s",
            f"{run['one_file']['units_indexed']} units indexed and embedded",
            "≤ 1s + its embedding",
        ],
        [
            "worker RSS idle (model loaded, a few memory calls)",
            f"{run['idle_rss']:.0f} MiB" if run["idle_rss"] else "n/a",
            "",
            f"≤ {TARGETS['idle_rss_mib']:.0f} MiB",
        ],
        [
            "peak worker RSS, cold index",
            f"{run['peak_rss']:.0f} MiB" if run["peak_rss"] else "n/a",
            "",
            f"≤ {TARGETS['peak_rss_mib']:.0f} MiB",
        ],
    ]
    for tool, summary in searches.items():
        rows.append(
            [
                f"{tool} ({run['units']} units)",
                f"p50 {summary['p50_ms']:.1f} ms",
                f"p95 {summary['p95_ms']:.1f} ms",
                f"p95 ≤ {TARGETS['search_p95_ms' if tool == 'search_code' else 'similar_p95_ms']:.0f} ms",
            ]
        )
    model_head = {runtime: latency_summary_ms(values) for runtime, values in run["per_head"].items()}
    for runtime, summary in model_head.items():
        rows.append(
            [
                f"model alone, one snippet's head, {runtime}",
                f"p50 {summary['p50_ms']:.1f} ms",
                f"p95 {summary['p95_ms']:.1f} ms",
                "",
            ]
        )
    if run["during"]:
        summary = latency_summary_ms(run["during"])
        rows.append(
            [
                f"search_code while an index job runs ({len(run['during'])} calls)",
                f"p50 {summary['p50_ms']:.1f} ms",
                f"p95 {summary['p95_ms']:.1f} ms",
                "",
            ]
        )
        searches["search_code_during_index"] = summary
    print_table(["measure", "value", "rate", "target"], rows)
    return {
        "corpus": list(CORPUS),
        "files": run["files"],
        "cold": cold,
        "cold_seconds": cold_s,
        "searchable_seconds": searchable_s,
        "first_search_seconds": cold["probe_s"],
        "fast_units_per_s": fast_rate,
        "pipeline_units_per_s": pipeline_rate,
        "model_units_per_s": run["model_rate"],
        "overhead_pct": overhead,
        "unchanged_seconds": run["unchanged_s"],
        "one_file_seconds": run["one_file_s"],
        "one_file": run["one_file"],
        "peak_worker_rss_mib": run["peak_rss"],
        "idle_worker_rss_mib": run["idle_rss"],
        "units_searched": run["units"],
        "search": searches,
        "model_snippet_head": model_head,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-code-"))
    try:
        return await _run_in(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
