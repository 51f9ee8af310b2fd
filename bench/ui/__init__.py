"""``python -m bench ui``: the web view over a store grown as capture grows it (20,000 experiences,
10,000 memories by default): each page's render time, the cluster map drawn in a real browser,
and export and import throughput.

Arq mode, a real worker and the real model; the store is seeded through the real paths (the
worker's persist job, ``store_memory``); the view runs as ``learning-memory ui``; pages are timed
warm over HTTP (what the server takes to answer), the map in Debian's chromium (from navigation
to the last point drawn, the worker's layout already computed).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from selenium.webdriver.remote.webdriver import WebDriver

from bench.code import call_tool
from bench.common import latency_summary_ms, print_table, progress
from bench.processes import serving
from bench.scale.seed import seed_experiences, seed_memories
from bench.ui.browser import chromium, screenshot, wait_until
from bench.ui.process import view_process
from learning_memory.cli.samples import generated_entries
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared.contracts.experiences import AXES
from learning_memory.shared.settings import load_settings

RENDER_P95_MS = 300.0
MAP_DRAWN_MS = 1000.0
MAP_POINTS = 5000
AUDIT_AFTER_CHANGE = "/audit after a change"
PAGES = (
    "",
    "ghap",
    "experiences",
    "experiences?q=the+deploy+failed+after+a+dependency+upgrade",
    "experiences?source=auto&outcome=falsified",
    "values",
    "memories",
    "memories?q=how+do+we+ship+to+production",
    "clusters?axis=full",
    "audit",
    "code",
    "changes",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--experiences", type=int, default=20_000, help="experiences seeded (20000)")
    parser.add_argument("--memories", type=int, default=10_000, help="memories seeded (10000)")
    parser.add_argument("--renders", type=int, default=20, help="timed loads of each page (20)")


def _time_pages(url: str, renders: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    with httpx.Client(base_url=url, timeout=300) as client:
        for path in PAGES:
            first = client.get("/" + path)  # warm: a first clustering or audit is not a render
            if first.status_code != 200:
                raise RuntimeError(f"/{path} answered {first.status_code}: {first.text[:300]}")
            samples = []
            for _ in range(renders):
                started = time.perf_counter()
                client.get("/" + path).raise_for_status()
                samples.append(time.perf_counter() - started)
            times["/" + path] = samples
    return times


async def _time_audit_after_changes(url: str, client: Client, changes: int) -> list[float]:
    """The audit page loaded once after each of ``changes`` new memories: what a person waits
    for after the store moved on (the first audit of a store, and one read again unchanged, are
    not this)."""
    waits = []
    with httpx.Client(base_url=url, timeout=300) as view:
        await asyncio.to_thread(view.get, "/audit")
        for n in range(changes):
            content = f"Audit bench note {n}: the staging database is reset every Monday at 06:00."
            await call_tool(client, "store_memory", {"content": content, "category": "fact"})
            started = time.perf_counter()
            (await asyncio.to_thread(view.get, "/audit")).raise_for_status()
            waits.append(time.perf_counter() - started)
    return waits


def _map_ready(driver: WebDriver) -> bool:
    return driver.find_element("id", "cluster-map").get_attribute("data-ready") == "1"


def _time_maps(url: str) -> list[dict[str, Any]]:
    """Per axis: points shown, the worker's layout time (cold), and the map drawn (warm)."""
    maps = []
    with httpx.Client(base_url=url, timeout=600) as client, chromium() as driver:
        for axis in AXES:
            cold = client.get(f"/api/clusters/{axis}/map")
            if cold.status_code != 200:
                progress(f"ui: no map for {axis}: {cold.text[:200]}")
                continue
            laid = cold.json()
            drawn = []
            for _ in range(3):
                driver.get(f"{url}clusters?axis={axis}")
                wait_until(driver, _map_ready, timeout=60)
                canvas = driver.find_element("id", "cluster-map")
                drawn.append(
                    float(driver.execute_script("return Number(arguments[0].dataset.drawnAt)", canvas))
                )
            screenshot(driver, f"bench-map-{axis}")
            maps.append(
                {
                    "axis": axis,
                    "points": len(laid["points"]["x"]),
                    "layout_s": laid["layout_seconds"],
                    "drawn_ms": min(drawn),
                    "drawn_ms_runs": drawn,
                }
            )
    return maps


async def _run_in(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    samples = generated_entries(min(args.experiences, 5000) + 10, seed=11)
    random.Random(5).shuffle(samples)
    async with serving(args.redis_url, tmp) as (client, worker):
        settings = load_settings(
            redis_url=worker.env["LMS_REDIS_URL"], namespace=worker.env["LMS_NAMESPACE"], queue="arq"
        )
        jobs = ArqTransport(settings)
        try:
            seeding = {
                "experiences_s": await seed_experiences(jobs, samples, range(args.experiences)),
                "memories_s": await seed_memories(client, args.memories),
            }
            progress(f"ui: seeded {seeding}")
            with view_process(worker.env, tmp / "ui.log") as url:
                try:
                    maps = await asyncio.to_thread(_time_maps, url)
                    pages = await asyncio.to_thread(_time_pages, url, args.renders)
                    pages[AUDIT_AFTER_CHANGE] = await _time_audit_after_changes(url, client, 5)
                except RuntimeError:
                    progress(f"ui: the view's log ends:\n{(tmp / 'ui.log').read_text()[-3000:]}")
                    progress(f"ui: the worker's log ends:\n{(tmp / 'worker.log').read_text()[-3000:]}")
                    raise
            porting = await _porting(worker.env, tmp)
        finally:
            await jobs.close()
    return {"seeding": seeding, "pages": pages, "maps": maps, "porting": porting}


async def _porting(env: dict[str, str], tmp: Path) -> dict[str, Any]:
    try:
        from bench.porting import measure_porting  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return {}
    measured: dict[str, Any] = await measure_porting(env, tmp)
    return measured


def _report(measured: dict[str, Any]) -> dict[str, Any]:
    rows = []
    summaries = {path: latency_summary_ms(samples) for path, samples in measured["pages"].items()}
    for path, summary in summaries.items():
        # A recomputed audit is work, not a render: told, with no render target.
        rendered = path != AUDIT_AFTER_CHANGE
        ok = summary["p95_ms"] <= RENDER_P95_MS or not rendered
        rows.append(
            [
                path,
                f"{summary['p50_ms']:.0f} ms",
                f"{summary['p95_ms']:.0f} ms",
                f"≤ {RENDER_P95_MS:.0f}" if rendered else "",
                "ok" if ok else "OVER",
            ]
        )
    for drawn in measured["maps"]:
        ok = drawn["drawn_ms"] <= MAP_DRAWN_MS or drawn["points"] < MAP_POINTS
        rows.append(
            [
                f"map {drawn['axis']} ({drawn['points']:,} points; layout {drawn['layout_s']:.1f} s)",
                "",
                f"{drawn['drawn_ms']:.0f} ms",
                f"≤ {MAP_DRAWN_MS:.0f}",
                "ok" if ok else "OVER",
            ]
        )
    for what, figure in measured["porting"].items():
        rows.append([what, "", str(figure), "", ""])
    print_table(["what", "p50", "p95 / figure", "target", ""], rows)
    passed = all(row[-1] != "OVER" for row in rows)
    return {"pages": summaries, "pass": passed}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-ui-"))
    started = time.perf_counter()
    try:
        measured = await _run_in(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = _report(measured)
    return {
        "parameters": {"experiences": args.experiences, "memories": args.memories, "renders": args.renders},
        "seeding": measured["seeding"],
        "maps": measured["maps"],
        "porting": measured["porting"],
        "total_s": time.perf_counter() - started,
        **report,
    }
