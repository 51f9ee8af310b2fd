"""Qdrant Edge (our EdgeVectorStore) against qdrant-client's on-disk local mode: upsert and search.

The baseline is what most peers embed: ``QdrantClient(path=...)``, called directly (not through
our wrapper), with the same points, batches, queries and filters. Qdrant Edge runs twice:

- *default*, as the worker runs it: exact search (no HNSW), payload indexes on the filtered
  fields, a background vacuum pass every 4096 writes. The targets are checked on this one.
- *with HNSW*: the same points, then one ``optimize()`` that builds an HNSW index over all of
  them. The build holds the GIL (the event loop stalls for all of it); searches are timed after.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from bench.common import latency_summary_ms, print_table, progress
from learning_memory.shared.log import configure_logging
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    MatchValue,
    PayloadIndexType,
    PointData,
    Range,
)
from learning_memory.worker.vectors.edge import EdgeVectorStore

COLLECTION = "bench"
CATEGORIES = ("bug", "feature", "refactor", "docs", "test")
TAGS = ("python", "rust", "go", "sql", "infra", "ui")
TARGETS = {"upsert": 20.0, "filtered_p50": 10.0}
SPEC_INDEXES: dict[str, PayloadIndexType] = {
    "category": "keyword",
    "importance": "float",
    "created_at": "float",
    "tags": "keyword",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--points", type=int, default=20_000, help="points to store (20000)")
    parser.add_argument("--queries", type=int, default=200, help="queries of each kind (200)")
    parser.add_argument("--dim", type=int, default=384, help="vector dimension (384, MiniLM's)")
    parser.add_argument("--batch", type=int, default=256, help="points per upsert call (256)")


class Data:
    """Random unit vectors with payloads; queries, each with a filter (category, importance range)."""

    def __init__(self, points: int, queries: int, dim: int) -> None:
        rng = np.random.default_rng(42)
        vectors = rng.standard_normal((points, dim)).astype(np.float32)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        self.ids = [str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | i)) for i in range(points)]
        self.payloads = [
            {
                "category": CATEGORIES[int(rng.integers(len(CATEGORIES)))],
                "importance": round(float(rng.random()), 4),
                "tags": sorted(
                    {TAGS[int(t)] for t in rng.integers(0, len(TAGS), size=int(rng.integers(1, 4)))}
                ),
                "created_at": 1.7e9 + i * 60.0,
            }
            for i in range(points)
        ]
        queries_v = rng.standard_normal((queries, dim)).astype(np.float32)
        self.queries = queries_v / np.linalg.norm(queries_v, axis=1, keepdims=True)
        self.filters = [
            (CATEGORIES[q % len(CATEGORIES)], round(float(rng.random()) * 0.5, 3)) for q in range(queries)
        ]


def _time_each(calls: list[Callable[[], Any]]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


async def _time_each_async(calls: list[Callable[[], Awaitable[Any]]]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


def run_local(data: Data, folder: Path, batch: int) -> dict[str, Any]:
    progress(f"vectors: qdrant-client local mode, {len(data.ids)} points")
    client = QdrantClient(path=str(folder))
    try:
        dim = data.vectors.shape[1]
        client.create_collection(COLLECTION, models.VectorParams(size=dim, distance=models.Distance.COSINE))
        started = time.perf_counter()
        for start in range(0, len(data.ids), batch):
            points = [
                models.PointStruct(id=data.ids[i], vector=data.vectors[i].tolist(), payload=data.payloads[i])
                for i in range(start, min(start + batch, len(data.ids)))
            ]
            client.upsert(COLLECTION, points)
        upsert_s = time.perf_counter() - started
        progress(f"vectors: local upsert {upsert_s:.1f} s; searching")

        def search(q: int, filtered: bool) -> Callable[[], Any]:
            flt = None
            if filtered:
                category, low = data.filters[q]
                flt = models.Filter(
                    must=[
                        models.FieldCondition(key="category", match=models.MatchValue(value=category)),
                        models.FieldCondition(key="importance", range=models.Range(gte=low, lt=low + 0.5)),
                    ]
                )
            vector = data.queries[q].tolist()
            return lambda: client.query_points(COLLECTION, query=vector, query_filter=flt, limit=10)

        queries = range(len(data.queries))
        plain = _time_each([search(q, False) for q in queries])
        filtered = _time_each([search(q, True) for q in queries])
    finally:
        client.close()
    return {
        "upsert_s": upsert_s,
        "search": latency_summary_ms(plain),
        "filtered": latency_summary_ms(filtered),
    }


async def run_edge(data: Data, folder: Path, batch: int, *, hnsw: bool) -> dict[str, Any]:
    progress(f"vectors: Qdrant Edge ({'with HNSW' if hnsw else 'default'}), {len(data.ids)} points")
    # hnsw_threshold=1: every segment gets an HNSW index, built by the one optimize() below.
    options: dict[str, Any] = {"hnsw_threshold": 1, "optimize_every": None} if hnsw else {}
    store = await EdgeVectorStore.open(folder, **options)
    try:
        await store.ensure_collection(CollectionSpec(COLLECTION, data.vectors.shape[1], SPEC_INDEXES))
        started = time.perf_counter()
        for start in range(0, len(data.ids), batch):
            stop = min(start + batch, len(data.ids))
            await store.upsert(
                COLLECTION,
                [PointData(data.ids[i], data.vectors[i], data.payloads[i]) for i in range(start, stop)],
            )
        upsert_s = time.perf_counter() - started
        await store.wait_for_background()
        started = time.perf_counter()
        if hnsw:
            await store.optimize(COLLECTION)
        build_s = time.perf_counter() - started
        # Peeks at the shard: the numbers say whether HNSW indexes were built.
        info = store._collections[COLLECTION].shard.info()
        progress(f"vectors: Edge upsert {upsert_s:.2f} s, indexed {info.indexed_vectors_count}; searching")

        def search(q: int, filtered: bool) -> Callable[[], Awaitable[Any]]:
            flt = None
            if filtered:
                category, low = data.filters[q]
                flt = Filter((MatchValue("category", category), Range("importance", gte=low, lt=low + 0.5)))
            return lambda: store.search(COLLECTION, data.queries[q], limit=10, filter=flt)

        queries = range(len(data.queries))
        plain = await _time_each_async([search(q, False) for q in queries])
        filtered = await _time_each_async([search(q, True) for q in queries])
    finally:
        await store.close()
    return {
        "upsert_s": upsert_s,
        "hnsw_build_s": build_s,
        "segments": info.segments_count,
        "indexed_vectors": info.indexed_vectors_count,
        "search": latency_summary_ms(plain),
        "filtered": latency_summary_ms(filtered),
    }


def _ratio(baseline: float, ours: float) -> float:
    return baseline / ours if ours > 0 else float("inf")


def _row(
    metric: str, base: float | None, ours: float, unit: str, target: str = "", ok: bool | None = None
) -> list[str]:
    digits = 2 if unit == "s" else 1
    return [
        metric,
        "-" if base is None else f"{base:.{digits}f} {unit}",
        f"{ours:.{digits}f} {unit}",
        "-" if base is None else f"{_ratio(base, ours):.1f}x",
        target,
        "" if ok is None else ("PASS" if ok else "FAIL"),
    ]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    configure_logging("WARNING")  # structlog's default prints to stdout, which carries only results
    data = Data(args.points, args.queries, args.dim)
    with tempfile.TemporaryDirectory(prefix="lms-bench-vectors-") as tmp:
        root = Path(tmp)
        edge = await run_edge(data, root / "edge", args.batch, hnsw=False)
        hnsw = await run_edge(data, root / "edge-hnsw", args.batch, hnsw=True)
        local = run_local(data, root / "local", args.batch)

    ratios = {
        "upsert": _ratio(local["upsert_s"], edge["upsert_s"]),
        "filtered_p50": _ratio(local["filtered"]["p50_ms"], edge["filtered"]["p50_ms"]),
    }
    ok = {name: ratios[name] >= TARGETS[name] for name in TARGETS}
    n = f"{args.points // 1000}k"
    search, filtered = "search", "filtered"
    rows = [
        _row(f"upsert {n}", local["upsert_s"], edge["upsert_s"], "s", ">= 20x", ok["upsert"]),
        _row("search p50", local[search]["p50_ms"], edge[search]["p50_ms"], "ms"),
        _row("search p95", local[search]["p95_ms"], edge[search]["p95_ms"], "ms"),
        _row(
            "filtered p50",
            local[filtered]["p50_ms"],
            edge[filtered]["p50_ms"],
            "ms",
            ">= 10x",
            ok["filtered_p50"],
        ),
        _row("filtered p95", local[filtered]["p95_ms"], edge[filtered]["p95_ms"], "ms"),
        _row(f"HNSW build over {n} (loop stalled)", None, hnsw["hnsw_build_s"], "s"),
        _row("search p50, Edge with HNSW", local[search]["p50_ms"], hnsw[search]["p50_ms"], "ms"),
        _row("filtered p50, Edge with HNSW", local[filtered]["p50_ms"], hnsw[filtered]["p50_ms"], "ms"),
    ]
    print_table(["metric", "qdrant-client local", "Qdrant Edge", "Edge faster by", "target", "verdict"], rows)
    print(
        f"\nEdge default: exact search, {edge['segments']} segment(s), {edge['indexed_vectors']} vectors in "
        f"HNSW; with HNSW: {hnsw['indexed_vectors']} of {args.points}. {args.queries} queries of each kind, "
        f"limit 10, {args.dim} dims, batches of {args.batch}."
    )
    return {
        "points": args.points,
        "queries": args.queries,
        "dim": args.dim,
        "batch": args.batch,
        "local": local,
        "edge_default": edge,
        "edge_hnsw": hnsw,
        "ratios": ratios,
        "targets": TARGETS,
        "pass": all(ok.values()),
    }
