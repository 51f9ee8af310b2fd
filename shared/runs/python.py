"""pytest, unittest and plain Python tracebacks."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, last_match, mentions

_PYTEST_MARK = re.compile(
    r"^=+ (?:FAILURES|ERRORS|short test summary info|test session starts) =+$"
    r"|^(?:FAILED|ERROR) \S+::\S+"
    r"|^=* ?(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?),? ?)+ in \d",
    re.MULTILINE,
)
_PYTEST_COUNTS = re.compile(
    r"^=* ?((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun),? ?)+)"
    r" in [\d.]+s",
    re.MULTILINE,
)
_COUNT = re.compile(r"(\d+) (\w+)")
_BLOCK = re.compile(r"^=+ (FAILURES|ERRORS) =+$|^=+ [^=\n]* =+$", re.MULTILINE)
_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$", re.MULTILINE)
_LOCATION = re.compile(r"^([^\s:>][^:\n]*\.py):(\d+): ?(?:in (\S+)|([\w.]*))$", re.MULTILINE)
_NATIVE_FRAME = re.compile(r'^[ \t]*File "([^"\n]+)", line \d+, in (\S+)$', re.MULTILINE)
_DEF = re.compile(r"^[ \t]*(?:async )?def (\w+)\(", re.MULTILINE)
_E_LINE = re.compile(r"^E {1,7}(.*)$", re.MULTILINE)
_SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
_TYPED = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: (.*)|:?$)")
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: (.*))?$")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s", re.MULTILINE)
_UNITTEST_RESULT = re.compile(r"^(?:FAILED|OK) ?\(([^)\n]*)\)|^OK$", re.MULTILINE)
_UNITTEST_HEAD = re.compile(
    r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^)\n]+)\)( \([^\n]*\))?\n-{20,}\n", re.MULTILINE
)
_UNITTEST_END = re.compile(r"^(?:={20,}|-{20,})$", re.MULTILINE)


def short_type(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def type_and_message(line: str) -> tuple[str | None, str]:
    """ "ValueError: bad" -> ("ValueError", "bad"); pytest's rewritten "assert 1 == 2" is an
    AssertionError."""
    if line.startswith("assert "):
        return "AssertionError", line
    typed = _TYPED.match(line)
    if typed and (typed.group(2) is not None or line.rstrip(":") == typed.group(1)):
        return short_type(typed.group(1)), typed.group(2) or ""
    return None, line


def _counts(text: str) -> tuple[int | None, int | None]:
    found = last_match(_PYTEST_COUNTS, text)
    if found is None:
        return None, None
    passed = failed = 0
    for number, word in _COUNT.findall(found.group(1)):
        if word == "passed":
            passed += int(number)
        elif word in ("failed", "error", "errors"):
            failed += int(number)
    return passed, failed


def _node_id(name: str, path: str | None, summary: dict[str, str]) -> str:
    """The section title ("TestGroup.test_method") as pytest's node id, taken from the short summary
    when it lists the test, else built from the test's file."""
    for prefix in ("ERROR at setup of ", "ERROR at teardown of ", "ERROR at call of "):
        name = name.removeprefix(prefix)
    if name.startswith("ERROR collecting "):
        return name.removeprefix("ERROR collecting ")
    head, bracket, params = name.partition("[")
    tail = head.replace(".", "::") + bracket + params
    candidates = [node for node in summary if node.endswith("::" + tail)]
    if path:
        candidates = [node for node in candidates if node.startswith(path + "::")] or candidates
    if candidates:
        return candidates[0]
    return f"{path}::{tail}" if path else tail


def _section(name: str, body: str, summary: dict[str, str]) -> Found:
    frames: list[Frame] = []
    error_type: str | None = None
    chunk_start = 0
    for location in _LOCATION.finditer(body):
        function = location.group(3)
        if function is None:
            defined = _DEF.search(body, chunk_start, location.start())
            function = defined.group(1) if defined else None
        frames.append(Frame(location.group(1), function))
        error_type = location.group(4) or None
        chunk_start = location.end()
    frames += [Frame(path, function) for path, function in _NATIVE_FRAME.findall(body)]
    lines = [line.rstrip() for line in _E_LINE.findall(body)]
    lines = [line for line in lines if line.strip()]
    typed, message = type_and_message(lines[0].strip()) if lines else (None, "")
    if not lines and body.strip():
        message = body.strip().splitlines()[0]  # e.g. "ImportError while loading conftest"
    message = "\n".join([message, *lines[1:]]) if lines else message
    test_path = frames[0].path if frames else None
    node = _node_id(name, test_path, summary)
    return Found(node, typed or error_type, message, frames)


def parse_pytest(text: str) -> Parse | None:
    if not mentions(
        text,
        "passed",
        "failed",
        "error",
        "FAILURES",
        "ERRORS",
        "FAILED",
        "ERROR",
        "skipped",
        "deselected",
        "xfail",
        "xpass",
        "warning",
        "no tests ran",
    ):
        return None
    if not _PYTEST_MARK.search(text):
        return None
    summary = {node: (message or "") for _kind, node, message in _SUMMARY.findall(text)}
    found: list[Found] = []
    for block in _blocks(text):
        sections = list(_SECTION.finditer(block))
        for index, section in enumerate(sections):
            end = sections[index + 1].start() if index + 1 < len(sections) else len(block)
            found.append(_section(section.group(1), block[section.end() : end], summary))
    seen = {failure.test_id for failure in found}
    for node, message in summary.items():
        if node not in seen:
            error_type, text_message = type_and_message(message.removesuffix("...").strip())
            found.append(Found(node, error_type, text_message))
    passed, failed = _counts(text)
    return Parse("pytest", found, passed, failed)


def _blocks(text: str) -> list[str]:
    """The bodies of pytest's FAILURES and ERRORS blocks (each ends at the next ``====`` rule)."""
    blocks: list[str] = []
    rules = list(_BLOCK.finditer(text))
    for index, rule in enumerate(rules):
        if rule.group(1):
            end = rules[index + 1].start() if index + 1 < len(rules) else len(text)
            blocks.append(text[rule.end() : end])
    return blocks


def traceback(text: str) -> tuple[list[Frame], str | None, str] | None:
    """The frames, exception type and message of the last traceback in ``text``."""
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    body = text[start + len(_TRACEBACK) :]
    frames = [Frame(path, function) for path, function in _NATIVE_FRAME.findall(body)]
    message_lines: list[str] = []
    for line in body.splitlines()[1:]:
        if message_lines:
            if not line.strip():
                break
            message_lines.append(line)
        elif line and not line[0].isspace() and _EXCEPTION_LINE.match(line):
            message_lines.append(line)
    if not message_lines:
        return None
    name, _, first = message_lines[0].partition(": ")
    return frames, short_type(name.rstrip(":")), "\n".join([first, *message_lines[1:]]).strip()


def parse_traceback(text: str) -> Parse | None:
    """A Python program that died of an exception: one failure, no test."""
    read = traceback(text) if _TRACEBACK in text else None
    if read is None:
        return None
    frames, error_type, message = read
    return Parse("python", [Found(None, error_type, message, frames)])


def parse_unittest(text: str) -> Parse | None:
    if not mentions(text, "Ran "):
        return None
    ran = last_match(_UNITTEST_RAN, text)
    if ran is None:
        return None
    found: list[Found] = []
    for head in _UNITTEST_HEAD.finditer(text):
        end = _UNITTEST_END.search(text, head.end())
        body = text[head.end() : end.start() if end else len(text)]
        name, where, subtest = head.group(2), head.group(3), head.group(4) or ""
        test_id = where if where.endswith("." + name) else f"{where}.{name}"
        read = traceback(body)
        if head.group(1) == "UNEXPECTED SUCCESS" or read is None:
            found.append(Found(test_id + subtest, None, head.group(1).lower()))
            continue
        frames, error_type, message = read
        found.append(Found(test_id + subtest, error_type, message, frames))
    total = int(ran.group(1))
    result = _UNITTEST_RESULT.search(text, ran.end())
    failed = skipped = 0
    counted = (result.group(1) or "") if result else ""
    for key, number in re.findall(r"([a-z ]+)=(\d+)", counted):
        if key.strip() in ("failures", "errors", "unexpected successes"):
            failed += int(number)
        else:
            skipped += int(number)
    return Parse("unittest", found, max(total - failed - skipped, 0), failed)
