"""``python -m bench queue | all [--out DIR] [--redis-url URL]``.

A benchmark is a module ``bench/<name>.py`` (or a package ``bench/<name>/``) with
``add_arguments(parser)`` and ``async def run(args) -> dict``; adding one means adding its name
to ``BENCHMARKS`` (or to ``ON_DEMAND``, which `all` leaves out).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from bench.common import DEFAULT_REDIS_URL, BenchError, machine_info, progress

# Run in this order by `all`.
BENCHMARKS: tuple[str, ...] = (
    "queue",
    "startup",
    "vectors",
    "memory",
    "ghap",
    "code",
    "code_quality",
    "git",
    "learning",
    "loops",
    "context",
    "shared_state",
    "runs",
)
# Offered as subcommands but left out of `all`: they need inputs from outside this repository.
ON_DEMAND: tuple[str, ...] = ("semble", "ranking", "capture", "scale", "recall", "ui", "porting")


class Benchmark(Protocol):
    """What a ``bench/<name>.py`` module (or ``bench/<name>/`` package) provides."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    async def run(self, args: argparse.Namespace) -> dict[str, Any]: ...


def _load(name: str) -> Benchmark:
    module: ModuleType = importlib.import_module(f"bench.{name}")
    return cast(Benchmark, module)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=Path("bench/results"), help="where <name>.json goes (bench/results)"
    )
    # Common, not per benchmark: every result's machine block records the Redis version.
    parser.add_argument(
        "--redis-url",
        default=DEFAULT_REDIS_URL,
        help=f"Redis to use; keys are namespaced and removed afterwards ({DEFAULT_REDIS_URL})",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Learning Memory Server benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in (*BENCHMARKS, *ON_DEMAND):
        benchmark = _load(name)
        # The module docstring's first line is its help, so a new benchmark needs no extra wiring.
        doc = (sys.modules[f"bench.{name}"].__doc__ or name).strip().splitlines()[0]
        bench_parser = sub.add_parser(name, help=doc, description=doc)
        _add_common(bench_parser)
        benchmark.add_arguments(bench_parser)
    all_help = "every benchmark, each with its default options"
    all_parser = sub.add_parser("all", help=all_help, description=f"{all_help}: {', '.join(BENCHMARKS)}.")
    _add_common(all_parser)
    return parser


def _defaults_for(name: str, common: argparse.Namespace) -> argparse.Namespace:
    """A benchmark's own defaults, with the common options `all` was given.

    `all` does not take each benchmark's options: two benchmarks may one day mean
    different things by the same flag.
    """
    parser = argparse.ArgumentParser()
    _add_common(parser)
    _load(name).add_arguments(parser)
    args = parser.parse_args([])
    args.out, args.redis_url = common.out, common.redis_url
    return args


def _write_json(out_dir: Path, name: str, document: dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return path


async def _run_one(name: str, args: argparse.Namespace) -> Path:
    result = await _load(name).run(args)
    document = {"benchmark": name, "machine": await machine_info(args.redis_url), **result}
    # Once, after the measurements: a blocking write cannot disturb them.
    path = _write_json(args.out, name, document)
    print(f"\nwrote {path}")
    return path


async def _main(args: argparse.Namespace) -> int:
    names = BENCHMARKS if args.command == "all" else (args.command,)
    for name in names:
        run_args = _defaults_for(name, args) if args.command == "all" else args
        progress(f"== bench {name}")
        await _run_one(name, run_args)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_main(args))
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
