"""How long reading a shell command's outcome takes (``learning_memory.shared.runs.read_run``).

The Claude Code hooks read every Bash command's output, so the reading must cost next to nothing.
Each run output of tests/fixtures/runs is repeated to 20,000 characters (what a hook keeps) and
read twice: as the runner's own command (its parser alone) and as ``make test`` (a wrapper, whose
output every parser is tried on).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.common import latency_summary_ms, print_table, progress
from learning_memory.shared.runs import read_run

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs"
CHARS = 20_000
TARGET_MS = 5.0
# The command that ran each folder's output.
COMMANDS = {
    "pytest": "pytest",
    "unittest": "python -m unittest",
    "mypy": "mypy .",
    "ruff": "ruff check .",
    "flake8": "flake8",
    "pylint": "pylint src",
    "jest": "npx jest",
    "vitest": "npx vitest run",
    "mocha": "npx mocha",
    "node": "node --test",
    "tsc": "npx tsc",
    "eslint": "npx eslint .",
    "cargo": "cargo test",
    "rustc": "rustc main.rs",
    "nextest": "cargo nextest run",
    "go": "go test ./...",
    "golangci-lint": "golangci-lint run",
    "rspec": "bundle exec rspec",
    "minitest": "rails test",
    "rubocop": "rubocop",
    "maven": "mvn test",
    "javac": "javac Main.java",
    "gradle": "./gradlew test",
    "dotnet": "dotnet test",
    "swift": "swift test",
    "exunit": "mix test",
    "phpunit": "vendor/bin/phpunit",
    "ctest": "ctest",
    "gcc": "gcc -c calc.c",
    "negative": "./test.sh",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=30, help="reads per output and command (30)")


def _timed(command: str, text: str, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        read_run(command, text, 1, worktree="/home/dev/wt1/pyproj")
        samples.append(time.perf_counter() - started)
    return samples


async def run(args: argparse.Namespace) -> dict[str, Any]:
    own: list[float] = []
    wrapped: list[float] = []
    slowest: dict[str, float] = {}
    for path in sorted(FIXTURES.rglob("*.txt")):
        name = str(path.relative_to(FIXTURES))
        progress(f"runs: {name}")
        text = path.read_text(encoding="utf-8")
        text = (text * (CHARS // max(len(text), 1) + 1))[-CHARS:]
        mine = _timed(COMMANDS[name.split("/", 1)[0]], text, args.runs)
        swept = _timed("make test", text, args.runs)
        own += mine
        wrapped += swept
        slowest[name] = max(sorted(mine)[len(mine) // 2], sorted(swept)[len(swept) // 2]) * 1000
    own_summary, every_summary = latency_summary_ms(own), latency_summary_ms(wrapped)
    rows = [
        [label, f"{summary['p50_ms']:.2f}", f"{summary['p95_ms']:.2f}", f"{summary['max_ms']:.2f}"]
        for label, summary in (("own parser", own_summary), ("every parser", every_summary))
    ]
    print_table(["read_run, 20,000 chars", "p50 ms", "p95 ms", "max ms"], rows)
    return {
        "chars": CHARS,
        "target_ms": TARGET_MS,
        "own_parser": own_summary,
        "every_parser": every_summary,
        "slowest_outputs_p50_ms": dict(sorted(slowest.items(), key=lambda item: -item[1])[:5]),
    }
