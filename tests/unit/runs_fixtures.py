"""The run outputs of tests/fixtures/runs, read as the hooks would read them."""

from __future__ import annotations

from pathlib import Path

from learning_memory.shared.contracts.capture import RunOutcome
from learning_memory.shared.runs import read_run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
# The checkouts the fixtures were produced in (see the fixtures' README).
PYTHON = "/home/dev/wt1/pyproj"
JS = "/home/dev/wt1/jsproj"
RUST = "/home/dev/wt1/rsproj"
GO = "/home/dev/wt1/goproj"
RUBY = "/home/dev/wt1/rbproj"
JAVA = "/home/dev/wt1/jproj"
ELIXIR = "/home/dev/wt1/exproj/calc"
PHP = "/home/dev/wt1/phpproj"
C = "/home/dev/wt1/cproj"
DOTNET = "/home/dev/wt1/csproj"
SWIFT = "/home/dev/wt1/swproj"

Row = tuple[str | None, str | None, str, str | None]


def output(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def read(name: str, command: str, exit_code: int | None, worktree: str | None) -> RunOutcome:
    return read_run(command, output(name), exit_code, worktree=worktree)


def rows(outcome: RunOutcome) -> list[Row]:
    """(test id, error type, message, frame) of each failure, in order."""
    return [(f.test_id, f.error_type, f.message, f.frame) for f in outcome.failures]
