"""Reading a shell command's outcome without a model: what ran, how it ended, and which failures.

The Claude Code hooks call :func:`read_run` on every Bash command, and the session miner on every
run of a log, so everything here is plain linear regular expressions over the output. Output that
no parser understands gives the exit status and its last error line, never a guessed failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from learning_memory.shared.contracts.capture import MAX_FAILURES, Failure, RunKind, RunOutcome
from learning_memory.shared.runs import (
    ctest,
    dotnet,
    elixir,
    go,
    javascript,
    jvm,
    php,
    python,
    python_checks,
    ruby,
    rust,
    swift,
)
from learning_memory.shared.runs.classify import classify, command_runs, weightiest
from learning_memory.shared.runs.commands import Run
from learning_memory.shared.runs.model import Found, Parse, own_frame
from learning_memory.shared.runs.normalise import mask_paths, normalise, strip_ansi
from learning_memory.shared.runs.signature import signature

__all__ = ["classify", "normalise", "read_run", "signature", "summary"]

Parser = Callable[[str], Parse | None]

# Each runner's own parsers. A runner that is not here (``make``, ``npm``, a project's script)
# ran something else: every parser of the sweep below is tried on its output.
_BY_RUNNER: dict[str, tuple[Parser, ...]] = {
    "pytest": (python.parse_pytest,),
    "unittest": (python.parse_unittest,),
    "mypy": (python_checks.parse_mypy,),
    "ruff": (python_checks.parse_ruff,),
    "flake8": (python_checks.parse_lint_lines,),
    "pylint": (python_checks.parse_lint_lines,),
    "jest": (javascript.parse_jest,),
    "vitest": (javascript.parse_vitest,),
    "mocha": (javascript.parse_mocha,),
    "node": (javascript.parse_node_tap,),
    "tsc": (javascript.parse_tsc,),
    "eslint": (javascript.parse_eslint,),
    "cargo": (rust.parse_cargo,),
    "rustc": (rust.parse_cargo,),
    "nextest": (rust.parse_cargo,),
    "go": (go.parse_go,),
    "golangci-lint": (go.parse_go_lint,),
    "rspec": (ruby.parse_rspec,),
    "minitest": (ruby.parse_minitest,),
    "rubocop": (ruby.parse_rubocop,),
    "maven": (jvm.parse_maven,),
    "gradle": (jvm.parse_gradle,),
    "javac": (jvm.parse_javac,),
    "dotnet": (dotnet.parse_dotnet,),
    "swift": (swift.parse_swift,),
    "exunit": (elixir.parse_exunit,),
    "elixir": (elixir.parse_exunit,),
    "phpunit": (php.parse_phpunit,),
    "ctest": (ctest.parse_ctest,),
    "gcc": (ctest.parse_gcc,),
}
# Parsers whose output markers no other tool prints, tried in this order on a wrapper's output.
_SWEEP: tuple[Parser, ...] = (
    python.parse_pytest,
    python.parse_unittest,
    javascript.parse_jest,
    javascript.parse_vitest,
    javascript.parse_mocha,
    javascript.parse_node_tap,
    rust.parse_cargo,
    go.parse_go,
    ruby.parse_rspec,
    ruby.parse_minitest,
    elixir.parse_exunit,
    php.parse_phpunit,
    jvm.parse_maven,
    jvm.parse_gradle,
    dotnet.parse_dotnet,
    swift.parse_swift,
    ctest.parse_ctest,
    javascript.parse_tsc,
    python_checks.parse_mypy,
    javascript.parse_eslint,
    python_checks.parse_ruff,
    ruby.parse_rubocop,
    jvm.parse_javac,
    ctest.parse_gcc,
)
# Lines that say only that something failed, not what: a wrapper's epilogue.
_NOISE = re.compile(
    r"^(?:make(?:\[\d+\])?: \*\*\*|npm (?:ERR!|error) (?:code|path|command|errno|A complete log|Lifecycle)"
    r"|error Command failed with exit code|\s*ELIFECYCLE|Errors while running CTest"
    r"|\[ERROR\] (?:\[Help \d+\]|-> \[Help|To see the full stack trace|Re-run Maven|For more information|$)"
    r"|error: test failed, to rerun|error: \d+ targets? failed|error: could not compile)"
)
_ERRORISH = re.compile(
    r"\b(?:error|errors|fatal|fail|failed|failure|failures|exception|panic(?:ked)?|traceback|cannot"
    r"|could not|not found|no such|denied|undefined|abort(?:ed)?)\b|(?-i:[a-z](?:Error|Exception))\b",
    re.IGNORECASE,
)
# Where last_error looks: the tail of the output, each line's head (a message is cut at 300 anyway).
_LAST_LINES = 200
_LAST_CHARS = 20_000
_LINE_CHARS = 400


def _parsers(runs: list[Run]) -> tuple[list[Parser], bool]:
    """The parsers to try on the command's output, and whether the sweep may follow them."""
    chosen: list[Parser] = []
    sweep = False
    for run in sorted(runs, key=lambda run: ("test", "build", "lint").index(run.kind)):
        own = _BY_RUNNER.get(run.runner or "")
        if own is None:
            sweep = True
        else:
            chosen += [parser for parser in own if parser not in chosen]
    return chosen, sweep or not chosen


def _read(text: str, parsers: Iterable[Parser]) -> list[Parse]:
    parses = (parser(text) for parser in parsers)
    return [parse for parse in parses if parse is not None]


def _sweep(text: str, tried: list[Parser]) -> list[Parse]:
    found = _read(text, (parser for parser in _SWEEP if parser not in tried))
    if not found:
        found = _read(text, (python.parse_traceback,))
    return found


def _failures(parses: list[Parse], worktree: str | None) -> list[Failure]:
    failures: list[Failure] = []
    seen: set[str] = set()
    read: set[tuple[object, ...]] = set()
    for parse in parses:
        for found in parse.found:
            # A failure printed twice (maven, dotnet build) is read once, before any normalising.
            raw = (found.family, found.test_id, found.error_type, found.message, tuple(found.frames))
            if raw in read:
                continue
            read.add(raw)
            failure = _failure(found.family or parse.family, found, worktree)
            if failure.signature not in seen:
                seen.add(failure.signature)
                failures.append(failure)
            if len(failures) == MAX_FAILURES:
                return failures
    return failures


def _failure(family: str, found: Found, worktree: str | None) -> Failure:
    frame = own_frame(found.frames, worktree)
    frame = mask_paths(frame) if frame else None
    test_id = mask_paths(found.test_id, worktree).strip() if found.test_id else None
    return Failure(
        test_id=test_id or None,
        error_type=found.error_type or None,
        message=normalise(found.message, worktree=worktree),
        frame=frame,
        signature=signature(family, test_id, found.error_type, found.message, frame=frame, worktree=worktree),
    )


def last_error(text: str, *, worktree: str | None = None) -> str | None:
    """The last line of ``text`` that reads like an error (a wrapper's "make: *** Error 2" skipped)."""
    lines = text[-_LAST_CHARS:].splitlines()[-_LAST_LINES:]
    for line in reversed(lines):
        line = line[:_LINE_CHARS]
        if line.strip() and _ERRORISH.search(line) and not _NOISE.match(line):
            return normalise(line, worktree=worktree) or None
    return None


def read_run(command: str, output: str, exit_code: int | None, *, worktree: str | None = None) -> RunOutcome:
    """What ``command`` was and how it ended, read from its ``output`` (stdout and stderr)."""
    runs = command_runs(command)
    main = weightiest(runs)
    kind, runner = (main.kind, main.runner) if main else ("other", None)
    # Progress bars redraw their line with a carriage return: each drawing is a line of its own.
    text = strip_ansi(output).replace("\r\n", "\n").replace("\r", "\n")
    parses: list[Parse] = []
    if main is not None:
        chosen, sweep = _parsers(runs)
        parses = _read(text, chosen)
        if sweep or not parses:
            parses += _sweep(text, chosen)
    if parses and runner not in _BY_RUNNER:
        runner = parses[0].runner
    failures = _failures(parses, worktree)
    counted = next((parse for parse in parses if parse.passed is not None or parse.failed is not None), None)
    tests_failed = counted.failed if counted else None
    passed = (exit_code == 0 or (exit_code is None and not failures)) and not failures and not tests_failed
    return RunOutcome(
        kind=kind,
        runner=runner,
        exit_code=exit_code,
        passed=passed,
        tests_passed=counted.passed if counted else None,
        tests_failed=tests_failed,
        failures=failures,
        last_error=None if passed or failures else last_error(text, worktree=worktree),
    )


def summary(outcome: RunOutcome) -> str:
    """One line for a hook's message, e.g. "pytest: 5 passed, 1 failed (exit 1)"."""
    label = outcome.runner or _KIND_LABELS[outcome.kind]
    if outcome.tests_passed is not None or outcome.tests_failed is not None:
        counts = [(outcome.tests_passed, "passed"), (outcome.tests_failed, "failed")]
        text = ", ".join(f"{number} {word}" for number, word in counts if number is not None)
    elif outcome.failures:
        count = len(outcome.failures)
        text = f"{count}{'+' if count == MAX_FAILURES else ''} error{'s' if count != 1 else ''}"
    else:
        text = "succeeded" if outcome.passed else "failed"
    code = f" (exit {outcome.exit_code})" if outcome.exit_code else ""
    return f"{label}: {text}{code}"


_KIND_LABELS: dict[RunKind, str] = {"test": "tests", "build": "build", "lint": "lint", "other": "command"}
