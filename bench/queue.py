"""Awaited-job round trip and idle worker CPU: our wakeable worker against arq's defaults.

Both workers run as real subprocesses against the same Redis in the same run. Ours is
``learning-memory worker``, timed through the server's own job client; the baseline is a
plain ``arq`` worker with arq's default settings (``bench.arq_baseline``), timed through
arq's own ``enqueue_job`` and ``Job.result``. Idle CPU is read from /proc for both
workers over one shared window once the latency runs are done.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.jobs import JobStatus
from redis.asyncio import Redis

from bench.arq_baseline import FUNCTION_NAME, QUEUE_ENV, REDIS_URL_ENV
from bench.common import (
    BenchError,
    latency_summary_ms,
    print_table,
    process_cpu_seconds,
    process_cpu_seconds_precise,
    progress,
    require_redis,
    wait_until,
)
from bench.processes import WorkerProcess, start_worker, stop_worker
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared import arq_backend
from learning_memory.shared.contracts.diagnostics import NOOP, NoopRequest
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import ConfigError, load_settings
from learning_memory.shared.state import live_workers

TARGETS = {"p50_ms": 5.0, "p95_ms": 15.0, "idle_cpu_pct": 1.0}
WARMUP_JOBS = 20
# Each baseline job costs ~0.5-1 s, so warm-up is kept to what connects the pool and the worker.
BASELINE_WARMUP_JOBS = 2
JOB_TIMEOUT_S = 10.0
START_TIMEOUT_S = 60.0
# Lets the last job's tail (result write, logging) land before the idle window opens.
IDLE_SETTLE_S = 1.0
BASELINE_NOTE = (
    "arq defaults are timed over fewer jobs: an awaited job there costs ~0.5-1 s, since the worker "
    "polls its queue every 0.5 s and Job.result polls for the result every 0.5 s; with so few jobs "
    "its p99 is close to its max."
)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=_positive_int, default=500, help="jobs timed on our worker (500)")
    parser.add_argument(
        "--baseline-jobs",
        type=_positive_int,
        default=40,
        help="jobs timed on arq's defaults (40: each costs ~0.5-1 s there)",
    )
    parser.add_argument(
        "--idle-seconds", type=_positive_float, default=10.0, help="idle CPU window, both workers (10)"
    )


# --- worker subprocesses -------------------------------------------------------------


# --- clients -----------------------------------------------------------------------


@dataclass
class Baseline:
    pool: ArqRedis
    queue: str
    job_ids: list[str]

    async def enqueue(self) -> Any:
        job = await self.pool.enqueue_job(FUNCTION_NAME, _queue_name=self.queue)
        # arq returns None only for a duplicate job id, and we never choose ids.
        assert job is not None
        self.job_ids.append(job.job_id)
        return job

    async def run_one(self) -> None:
        job = await self.enqueue()
        await job.result(timeout=JOB_TIMEOUT_S)  # arq's default poll_delay (0.5 s) is the point


async def time_jobs(count: int, one_job: Callable[[], Awaitable[object]]) -> list[float]:
    """Durations in seconds of ``count`` jobs run one after another."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await one_job()
        samples.append(time.perf_counter() - start)
    return samples


# --- phases ------------------------------------------------------------------------


async def wait_ours_ready(worker: WorkerProcess, redis: Redis, keys: Keys) -> float:
    async def heartbeat_live() -> bool:
        worker.ensure_alive()
        return bool(await live_workers(redis, keys))

    return await wait_until(heartbeat_live, timeout_s=START_TIMEOUT_S, what="our worker's heartbeat")


async def wait_baseline_ready(worker: WorkerProcess, baseline: Baseline) -> float:
    # A job that completes proves the worker is polling; its status is read without arq's 0.5 s poll.
    job = await baseline.enqueue()

    async def first_job_done() -> bool:
        worker.ensure_alive()
        return bool(await job.status() == JobStatus.complete)

    return await wait_until(first_job_done, timeout_s=START_TIMEOUT_S, what="the arq baseline's first job")


def _cpu_reading(worker: WorkerProcess) -> tuple[float, float | None]:
    return process_cpu_seconds(worker.pid), process_cpu_seconds_precise(worker.pid)


def _pct(before: float | None, after: float | None, window_s: float) -> float | None:
    return None if before is None or after is None else 100 * (after - before) / window_s


async def measure_idle_cpu(workers: Iterable[WorkerProcess], seconds: float) -> dict[str, Any]:
    """Percent of one core each worker used over one shared window of ``seconds``."""
    workers = list(workers)
    await asyncio.sleep(IDLE_SETTLE_S)
    for worker in workers:
        worker.ensure_alive()
    before = {w.label: _cpu_reading(w) for w in workers}
    start = time.perf_counter()
    await asyncio.sleep(seconds)
    after = {w.label: _cpu_reading(w) for w in workers}
    window = time.perf_counter() - start
    return {
        "window_s": window,
        "cpu_seconds": {label: round(after[label][0] - before[label][0], 6) for label in before},
        "pct_of_one_core": {label: _pct(before[label][0], after[label][0], window) for label in before},
        # /proc/<pid>/stat counts CPU time in clock ticks: smaller differences than this cannot be seen.
        "resolution_pct": 100 / os.sysconf("SC_CLK_TCK") / window,
        "pct_of_one_core_schedstat": {
            label: _pct(before[label][1], after[label][1], window) for label in before
        },
    }


async def delete_keys(redis: Redis, namespace: str, baseline_queue: str, job_ids: Iterable[str]) -> int:
    """Remove everything the run left: our namespace, the baseline queue, and arq's per-job keys."""
    keys = [key async for key in redis.scan_iter(match=f"{namespace}:*", count=1000)]
    keys.append(baseline_queue)
    # Our job ids carry the namespace; arq's keys for them are global.
    ours = f"{namespace}.*"
    for pattern in (arq_backend.result_key(ours), arq_backend.job_key(ours), arq_backend.retry_key(ours)):
        keys += [key async for key in redis.scan_iter(match=pattern, count=1000)]
    for job_id in job_ids:
        keys += [
            key(job_id) for key in (arq_backend.result_key, arq_backend.job_key, arq_backend.in_progress_key)
        ]
        keys.append(arq_backend.retry_key(job_id))
    deleted = 0
    for start in range(0, len(keys), 1000):
        deleted += await redis.delete(*keys[start : start + 1000])
    return deleted


# --- report ------------------------------------------------------------------------


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def summarise(
    ours: list[float], arq: list[float], idle: dict[str, Any], args: argparse.Namespace, namespace: str
) -> dict[str, Any]:
    ours_lat, arq_lat = latency_summary_ms(ours), latency_summary_ms(arq)
    ours_idle, arq_idle = idle["pct_of_one_core"]["ours"], idle["pct_of_one_core"]["arq_defaults"]
    precise = idle["pct_of_one_core_schedstat"]
    checks = {
        "p50_ms": ours_lat["p50_ms"] <= TARGETS["p50_ms"],
        "p95_ms": ours_lat["p95_ms"] <= TARGETS["p95_ms"],
        "idle_cpu_pct": ours_idle <= TARGETS["idle_cpu_pct"],
    }
    return {
        "parameters": {
            "jobs": args.jobs,
            "baseline_jobs": args.baseline_jobs,
            "idle_seconds": args.idle_seconds,
            "redis_url": args.redis_url,
            "namespace": namespace,
            "warmup_jobs": WARMUP_JOBS,
            "baseline_warmup_jobs": BASELINE_WARMUP_JOBS,
            "job_timeout_s": JOB_TIMEOUT_S,
        },
        "ours": {"latency": ours_lat, "idle_cpu_pct": ours_idle, "idle_cpu_pct_schedstat": precise["ours"]},
        "arq_defaults": {
            "latency": arq_lat,
            "idle_cpu_pct": arq_idle,
            "idle_cpu_pct_schedstat": precise["arq_defaults"],
        },
        "ratios": {
            # How many times faster ours is.
            **{key: _ratio(arq_lat[key], ours_lat[key]) for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms")},
            # Share of arq's idle CPU that ours uses.
            "idle_cpu_ours_over_arq": _ratio(ours_idle, arq_idle),
            "idle_cpu_schedstat_ours_over_arq": (
                None
                if precise["ours"] is None or precise["arq_defaults"] is None
                else _ratio(precise["ours"], precise["arq_defaults"])
            ),
        },
        "idle": idle,
        "targets": TARGETS,
        "pass": checks,
        "passed": all(checks.values()),
        "samples_ms": {"ours": [s * 1000 for s in ours], "arq_defaults": [s * 1000 for s in arq]},
        "notes": [BASELINE_NOTE],
    }


def _fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def print_report(result: dict[str, Any]) -> None:
    ours, arq, ratios = result["ours"], result["arq_defaults"], result["ratios"]
    rows = [
        [
            f"{key[:-3]} (ms)",
            _fmt(ours["latency"][key]),
            _fmt(arq["latency"][key]),
            _fmt(ratios[key], 1, "x faster"),
        ]
        for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms")
    ]
    rows.append(["jobs measured", str(ours["latency"]["n"]), str(arq["latency"]["n"]), ""])
    rows.append(
        [
            "idle CPU (% of one core)",
            _fmt(ours["idle_cpu_pct"]),
            _fmt(arq["idle_cpu_pct"]),
            _fmt(ratios["idle_cpu_ours_over_arq"], 2, "x (ours/arq)"),
        ]
    )
    rows.append(
        [
            "idle CPU, schedstat (%)",
            _fmt(ours["idle_cpu_pct_schedstat"], 3),
            _fmt(arq["idle_cpu_pct_schedstat"], 3),
            _fmt(ratios["idle_cpu_schedstat_ours_over_arq"], 2, "x (ours/arq)"),
        ]
    )
    print()
    print_table(["metric", "ours", "arq defaults", "ratio"], rows)
    idle = result["idle"]
    print(
        f"\nidle window {idle['window_s']:.1f}s, both workers at once; "
        f"/proc/<pid>/stat resolution {idle['resolution_pct']:.2f}% of one core "
        "(the schedstat row counts nanoseconds; the target is checked on the stat row)"
    )
    print(f"note: {BASELINE_NOTE}")
    print(f"targets (ours): {_verdict(result)}")


def _verdict(result: dict[str, Any]) -> str:
    ours, passed = result["ours"], result["pass"]
    checks = [
        f"p50 {_fmt(ours['latency']['p50_ms'])} ms <= {TARGETS['p50_ms']:g} ms",
        f"p95 {_fmt(ours['latency']['p95_ms'])} ms <= {TARGETS['p95_ms']:g} ms",
        f"idle {_fmt(ours['idle_cpu_pct'])}% <= {TARGETS['idle_cpu_pct']:g}%",
    ]
    marks = ["PASS" if passed[key] else "FAIL" for key in ("p50_ms", "p95_ms", "idle_cpu_pct")]
    overall = "all PASS" if result["passed"] else "FAIL"
    return "; ".join(f"{check} {mark}" for check, mark in zip(checks, marks, strict=True)) + f" -> {overall}"


# --- the run -----------------------------------------------------------------------


def _worker_envs(redis_url: str, namespace: str, data_dir: Path, baseline_queue: str) -> list[dict[str, str]]:
    ours = {
        **os.environ,
        "LMS_REDIS_URL": redis_url,
        "LMS_NAMESPACE": namespace,
        "LMS_DATA_DIR": str(data_dir),
        "LMS_LOG_LEVEL": "WARNING",
        "LMS_QUEUE": "arq",
    }
    baseline = {**os.environ, QUEUE_ENV: baseline_queue, REDIS_URL_ENV: redis_url}
    return [ours, baseline]


async def _start_workers(args: argparse.Namespace, namespace: str, tmp: Path) -> list[WorkerProcess]:
    ours_env, baseline_env = _worker_envs(args.redis_url, namespace, tmp, _baseline_queue(namespace))
    progress(f"starting both workers (namespace {namespace}, logs in {tmp})")
    ours_argv = [sys.executable, "-m", "learning_memory", "worker"]
    baseline_argv = [sys.executable, "-m", "arq", "bench.arq_baseline.BaselineSettings"]
    return [
        await start_worker("ours", ours_argv, ours_env, tmp / "ours-worker.log"),
        await start_worker("arq_defaults", baseline_argv, baseline_env, tmp / "arq-baseline.log"),
    ]


async def _measure_latencies(
    args: argparse.Namespace, client: ArqTransport, baseline: Baseline
) -> tuple[list[float], list[float]]:
    request = NoopRequest()

    async def ours_job() -> object:
        return await client.run(NOOP, request, budget_s=JOB_TIMEOUT_S)

    progress(f"ours: {WARMUP_JOBS} warm-up jobs, then {args.jobs} timed")
    await time_jobs(WARMUP_JOBS, ours_job)
    ours = await time_jobs(args.jobs, ours_job)

    progress(
        f"arq defaults: {BASELINE_WARMUP_JOBS} warm-up jobs, then {args.baseline_jobs} timed (~1 s each)"
    )
    await time_jobs(BASELINE_WARMUP_JOBS, baseline.run_one)
    arq = await time_jobs(args.baseline_jobs, baseline.run_one)
    return ours, arq


def _baseline_queue(namespace: str) -> str:
    # Under our namespace, so the SCAN at the end also takes arq's <queue>:health-check key.
    return f"{namespace}:arq-baseline"


async def _run_in(args: argparse.Namespace, namespace: str, tmp: Path) -> dict[str, Any]:
    try:
        settings = load_settings(redis_url=args.redis_url, namespace=namespace, queue="arq", data_dir=tmp)
    except ConfigError as exc:  # an LMS_* variable in our environment, which the worker would inherit
        raise BenchError(str(exc)) from None
    client = ArqTransport(settings)
    baseline = Baseline(
        await create_pool(RedisSettings.from_dsn(args.redis_url)), _baseline_queue(namespace), []
    )
    workers: list[WorkerProcess] = []
    try:
        workers = await _start_workers(args, namespace, tmp)
        # Both were started before either is awaited, so waiting in turn costs no start-up time.
        await wait_ours_ready(workers[0], client.redis, Keys(namespace))
        await wait_baseline_ready(workers[1], baseline)
        ours, arq = await _measure_latencies(args, client, baseline)
        progress(f"idle CPU: {args.idle_seconds:g}s window")
        idle = await measure_idle_cpu(workers, args.idle_seconds)
    finally:
        # Workers first: a live one would write its heartbeat back after the keys are deleted.
        exit_codes = await asyncio.gather(*(stop_worker(w) for w in workers))
        await delete_keys(client.redis, namespace, baseline.queue, baseline.job_ids)
        await client.close()
        await baseline.pool.aclose()
    result = summarise(ours, arq, idle, args, namespace)
    result["worker_exit_codes"] = {w.label: code for w, code in zip(workers, exit_codes, strict=True)}
    return result


def _dispose_tmp(tmp: Path, *, keep: bool) -> None:
    # A failed run's worker logs are what it has to explain itself; an empty dir explains nothing.
    if keep and any(tmp.iterdir()):
        progress(f"worker logs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    # Before any process or temp dir exists, so a missing Redis leaves nothing to clean up.
    await require_redis(args.redis_url)
    namespace = f"bench-{secrets.token_hex(4)}"
    tmp = Path(tempfile.mkdtemp(prefix="lms-bench-queue-"))
    succeeded = False
    try:
        result = await _run_in(args, namespace, tmp)
        succeeded = True
    finally:
        _dispose_tmp(tmp, keep=not succeeded)
    print_report(result)
    return result
