"""Go: go test's failures and panics, and the errors of go build, go vet and golangci-lint."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_MARK = re.compile(r"^(?:--- FAIL: |FAIL\t|ok  \t|# \S|panic: )|\.go:\d+:\d+: ", re.MULTILINE)
_LINE = re.compile(
    r"^([ \t]*)(?:(---|===) (FAIL|PASS|RUN|CONT|PAUSE|SKIP):? +(\S+)[^\n]*"
    r"|([\w./-]+_test\.go):\d+: ([^\n]*)"
    r"|panic: ([^\n]*?)(?: \[recovered\])?)$",
    re.MULTILINE,
)
_COMPILE = re.compile(r"^(?:vet: )?([^\s:][^:\n]*\.go):\d+:\d+: ([^\n]*)$", re.MULTILINE)
_LINTER = re.compile(r" \(([\w-]+)\)$")
_GOROUTINE = re.compile(r"^((?:[\w./-]|\(\*?\w+\))+)\([^\n]*\)\n\t([^\n]+\.go):\d+", re.MULTILINE)


class _Test:
    def __init__(self, name: str) -> None:
        self.name = name
        self.failed = False
        self.messages: list[tuple[str, str]] = []  # (file, message)
        self.panic: tuple[str, list[Frame]] | None = None


def _tests(text: str) -> tuple[list[_Test], int, bool]:
    tests: dict[str, _Test] = {}
    current: _Test | None = None
    passed = 0
    verbose = False
    for line in _LINE.finditer(text):
        marker, status, name, file, message, panic = line.group(2, 3, 4, 5, 6, 7)
        if marker:
            current = tests.setdefault(name, _Test(name))
            verbose = verbose or marker == "==="
            current.failed = current.failed or status == "FAIL"
            passed += status == "PASS"
        elif file and current is not None:
            current.messages.append((file, message))
        elif panic is not None and current is not None and current.panic is None:
            # The goroutine dump that follows, up to the package's FAIL line.
            end = text.find("\nFAIL", line.end())
            dump = text[line.end() : end if end > 0 else len(text)]
            frames = [Frame(path, symbol.rsplit(".", 1)[-1]) for symbol, path in _GOROUTINE.findall(dump)]
            current.panic = (panic, frames[::-1])
    return list(tests.values()), passed, verbose


def _failures(tests: list[_Test]) -> list[Found]:
    found: list[Found] = []
    names = [test.name for test in tests if test.failed]
    for test in tests:
        if not test.failed:
            continue
        if test.panic is not None:
            found.append(Found(test.name, "panic", test.panic[0], test.panic[1]))
        for file, message in test.messages[:1]:
            found.append(Found(test.name, None, message, [Frame(file)]))
        has_failing_child = any(name.startswith(test.name + "/") for name in names)
        if not test.messages and test.panic is None and not has_failing_child:
            found.append(Found(test.name, None, "failed"))
    return found


def _compile(text: str, *, linters: bool) -> list[Found]:
    found: list[Found] = []
    for path, message in _COMPILE.findall(text):
        linter = _LINTER.search(message) if linters else None
        if linter:
            message = message[: linter.start()]
        found.append(Found(None, linter.group(1) if linter else None, message, [Frame(path)]))
    return found


def parse_go(text: str) -> Parse | None:
    if not mentions(text, "--- FAIL", "--- PASS", "FAIL\t", "ok  \t", ".go:", "panic: "):
        return None
    if not _MARK.search(text):
        return None
    tests, passed, verbose = _tests(text)
    failing = [test.name for test in tests if test.failed]
    failed = sum(not any(other.startswith(name + "/") for other in failing) for name in failing)
    found = _compile(text, linters=False) + _failures(tests)
    counted = bool(tests)
    if not found and not counted and "ok  \t" not in text:
        return None
    return Parse("go", found, passed if verbose else None, failed if counted else None)


def parse_go_lint(text: str) -> Parse | None:
    if not mentions(text, ".go:", "0 issues"):
        return None
    found = _compile(text, linters=True)
    return Parse("golangci-lint", found, family="go") if found or "0 issues" in text else None
