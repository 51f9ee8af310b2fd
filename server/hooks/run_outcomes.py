"""Recognising test and build runs in a Bash command, and reading their outcome from the output.

Only the command's own words decide whether it is a run (``pip install pytest`` and
``cat pytest.ini`` are not); the counts are read from the runners' summary lines.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from learning_memory.shared.contracts.experiences import EvidenceKind

# Words that may stand before the runner without changing what runs.
_PREFIXES = frozenset({"time", "sudo", "env", "nice", "command", "exec", "xvfb-run", "timeout"})
_WRAPPERS = (("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("hatch", "run"), ("pdm", "run"))
_TEST_RUNNERS = frozenset(
    {"pytest", "py.test", "unittest", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest"}
)
_TEST_SUBCOMMANDS = {
    "go": {"test"},
    "cargo": {"test", "nextest"},
    "npm": {"test", "t"},
    "pnpm": {"test", "t"},
    "yarn": {"test"},
    "bun": {"test"},
    "deno": {"test"},
    "mvn": {"test", "verify"},
    "gradle": {"test", "check"},
    "./gradlew": {"test", "check"},
    "dotnet": {"test"},
    "mix": {"test"},
    "swift": {"test"},
    "make": {"test", "check", "tests"},
}
_BUILD_SUBCOMMANDS = {
    "go": {"build", "vet"},
    "cargo": {"build", "check", "clippy"},
    "mvn": {"compile", "package", "install"},
    "gradle": {"build", "assemble"},
    "./gradlew": {"build", "assemble"},
    "dotnet": {"build"},
    "swift": {"build"},
}
_BUILD_RUNNERS = frozenset({"tsc", "mypy", "ninja"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEGMENTS = re.compile(r"&&|\|\||;|\|")


def _words(segment: str) -> list[str]:
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _PREFIXES):
        words = words[1:]
    for wrapper in _WRAPPERS:
        if tuple(words[:2]) == wrapper:
            words = words[2:]
    if words[:1] == ["npx"] or words[:2] == ["yarn", "dlx"]:
        words = words[1:] if words[0] == "npx" else words[2:]
    if words and "/" in words[0] and not words[0].startswith("./"):
        words[0] = words[0].rsplit("/", 1)[1]  # .venv/bin/pytest runs pytest
    if len(words) >= 3 and re.fullmatch(r"python[0-9.]*", words[0]) and words[1] == "-m":
        words = words[2:]
    return words


def _segment_kind(words: list[str]) -> EvidenceKind | None:
    if not words:
        return None
    runner, rest = words[0], words[1:]
    if runner in _TEST_RUNNERS:
        return "test"
    subcommands = [word for word in rest if not word.startswith("-")]
    first = subcommands[0] if subcommands else ""
    if runner in ("npm", "pnpm", "yarn", "bun") and first == "run" and len(subcommands) > 1:
        script = subcommands[1]
        if script.startswith("test"):
            return "test"
        return "build" if script.startswith("build") else None
    if first in _TEST_SUBCOMMANDS.get(runner, ()):
        return "test"
    if first in _BUILD_SUBCOMMANDS.get(runner, ()) or runner in _BUILD_RUNNERS:
        return "build"
    if runner == "make" and not first:
        return "build"
    if runner == "cmake" and "--build" in rest:
        return "build"
    return None


def classify(command: str) -> EvidenceKind | None:
    """ "test" or "build" when a segment of the command runs one (a test wins over a build)."""
    kinds = {_segment_kind(_words(segment)) for segment in _SEGMENTS.split(command)}
    if "test" in kinds:
        return "test"
    return "build" if "build" in kinds else None


@dataclass(frozen=True)
class Counts:
    passed: int | None = None
    failed: int | None = None


_PAIR = re.compile(r"(\d+)\s+(passed|failed|errors?|passing|failing|failures?|examples?)\b", re.IGNORECASE)
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.MULTILINE)
_UNITTEST_FAILED = re.compile(r"^FAILED \((.*)\)", re.MULTILINE)
_GO_FAIL = re.compile(r"^--- FAIL:", re.MULTILINE)
_GO_PASS = re.compile(r"^--- PASS:", re.MULTILINE)
_EXIT = re.compile(r"Exit code (\d+)")


def exit_code(error: str) -> int | None:
    found = _EXIT.search(error)
    return int(found.group(1)) if found else None


def _summary_pairs(output: str) -> Counts | None:
    """The last line that counts passed and failed tests (pytest, jest, vitest, rspec); mocha puts
    "N passing" on the line before "M failing", so a line without a pass count takes its neighbour's."""
    lines = output.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        pairs = _PAIR.findall(lines[index])
        if not pairs:
            continue
        if not any(word.lower() in ("passed", "passing") for _, word in pairs):
            for above in lines[max(0, index - 3) : index]:
                pairs += [(n, w) for n, w in _PAIR.findall(above) if w.lower() == "passing"]
        passed = failed = 0
        examples: int | None = None
        for number, word in pairs:
            word = word.lower()
            if word in ("passed", "passing"):
                passed += int(number)
            elif word.startswith("example"):
                examples = int(number)
            else:
                failed += int(number)
        if examples is not None:  # rspec: "5 examples, 1 failure"
            passed = examples - failed
        return Counts(passed=passed, failed=failed)
    return None


def counts(output: str) -> Counts:
    cargo = _CARGO.findall(output)
    if cargo:
        return Counts(passed=sum(int(p) for p, _ in cargo), failed=sum(int(f) for _, f in cargo))
    ran = _UNITTEST_RAN.search(output)
    if ran:
        total = int(ran.group(1))
        failed_line = _UNITTEST_FAILED.search(output)
        failed = sum(int(n) for n in re.findall(r"=(\d+)", failed_line.group(1))) if failed_line else 0
        return Counts(passed=total - failed, failed=failed)
    pairs = _summary_pairs(output)
    if pairs is not None:
        return pairs
    go_failed, go_passed = len(_GO_FAIL.findall(output)), len(_GO_PASS.findall(output))
    if go_failed or go_passed:
        return Counts(passed=go_passed, failed=go_failed)
    return Counts()


def summary(kind: EvidenceKind, found: Counts, code: int | None) -> str:
    parts = []
    if found.passed is not None:
        parts.append(f"{found.passed} passed")
    if found.failed is not None:
        parts.append(f"{found.failed} failed")
    outcome = ", ".join(parts) if parts else ("succeeded" if code == 0 else "failed")
    return f"{'tests' if kind == 'test' else 'build'}: {outcome}" + (f" (exit {code})" if code else "")
