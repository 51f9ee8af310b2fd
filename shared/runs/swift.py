"""Swift: XCTest (Linux and macOS), Swift Testing, and swiftc's errors through swift build."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, last_match, mentions

_MARK = re.compile(
    r"Executed \d+ tests?, with|^Test Suite '|Test run with \d+ tests?|\.swift:\d+:", re.MULTILINE
)
# "path:12: error: Class.test : XCTAssertEqual failed: ..." (macOS: "-[Module.Class test]").
_XCTEST = re.compile(r"^([^\s:][^:\n]*\.swift):\d+: error: (\S+|-\[[^\]\n]+\]) : ([^\n]*)$", re.MULTILINE)
_XCT_ASSERT = re.compile(r"^(XCT\w+) failed(?::| -|$) ?(.*)$")
_CASE_FAILED = re.compile(r"^Test Case '([^'\n]+)' failed", re.MULTILINE)
_EXECUTED = re.compile(r"Executed (\d+) tests?, with (\d+) failures?", re.MULTILINE)
_SWIFT_TESTING = re.compile(
    r"^\S* ?Test ([^\n]+?) recorded an issue at ([^\s:]+):\d+:\d+: ([^\n]*)$", re.MULTILINE
)
_SWIFT_TESTING_RUN = re.compile(
    r"^\S* ?Test run with (\d+) tests?(?: in \d+ suites?)? (passed|failed)(?: after [\d.]+ seconds)?"
    r"(?: with (\d+) issues?)?",
    re.MULTILINE,
)
_COMPILE = re.compile(r"^([^\s:][^:\n]*\.swift):\d+:\d+: error: ([^\n]*)$", re.MULTILINE)


def _test_id(name: str) -> str:
    """macOS's "-[Module.Class test]" read as Linux's "Class.test"."""
    if name.startswith("-[") and name.endswith("]"):
        owner, _, method = name[2:-1].partition(" ")
        return f"{owner.rsplit('.', 1)[-1]}.{method}"
    return name


def parse_swift(text: str) -> Parse | None:
    if not mentions(text, "Executed ", "Test Suite '", "Test run with", ".swift:"):
        return None
    if not _MARK.search(text):
        return None
    found = [Found(None, None, message, [Frame(path)]) for path, message in _COMPILE.findall(text)]
    for path, name, message in _XCTEST.findall(text):
        asserted = _XCT_ASSERT.match(message)
        error_type, message = (asserted.group(1), asserted.group(2)) if asserted else (None, message)
        found.append(Found(_test_id(name), error_type, message.rstrip().removesuffix(" -"), [Frame(path)]))
    for name, path, message in _SWIFT_TESTING.findall(text):
        expectation = "Expectation" if message.startswith("Expectation") else None
        found.append(Found(name, expectation, message, [Frame(path)]))
    executed = last_match(_EXECUTED, text)
    if executed is not None:
        failed = len({_test_id(name) for name in _CASE_FAILED.findall(text)}) or int(executed.group(2))
        return Parse("swift", found, int(executed.group(1)) - failed, failed)
    run = _SWIFT_TESTING_RUN.search(text)
    if run is not None:
        failed = len({name for name, _, _ in _SWIFT_TESTING.findall(text)})
        return Parse("swift", found, int(run.group(1)) - failed, failed)
    return Parse("swift", found) if found else None
