"""JavaScript and TypeScript: jest, vitest, mocha, node's test runner (TAP), tsc and eslint."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, last_match, mentions

_AT = re.compile(r"^[ \t]+at [^\n]+$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^((?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*)(?: \[[\w-]+\])?: (.*)$")
# Function names that are call sites, not functions of the project ("at Object.toBe (...)").
_CALL_SITE = re.compile(r"^(?:async )?(?:Object|Context|TestContext|Test|new Promise)\.|<anonymous>")

_JEST_FILE = re.compile(r"^(PASS|FAIL) (\S+)", re.MULTILINE)
_JEST_HEAD = re.compile(r"^  ● (.+)$", re.MULTILINE)
_JEST_TESTS = re.compile(r"^Tests:[ \t]+(.*?)\d+ total$", re.MULTILINE)
_JEST_END = re.compile(r"^(?:Test Suites:|Tests:|Summary of all failing tests)", re.MULTILINE)
_CODE_FRAME = re.compile(r"^[ \t]*>?[ \t]*\d+ \||^[ \t]+\|")
_PAIR = re.compile(r"(\d+) (passed|failed|passing|failing)")

_VITEST_HEAD = re.compile(r"^ FAIL  (.+?)(?: \[ [^\]\n]+ \])?$", re.MULTILINE)
_VITEST_RULE = re.compile(r"^⎯{3,}", re.MULTILINE)
_VITEST_TESTS = re.compile(r"^[ \t]+Tests[ \t]+(.*)\(\d+\)$", re.MULTILINE)
_VITEST_MARK = re.compile(r"^[ \t]+Test Files[ \t]+", re.MULTILINE)
_VITEST_FRAME = re.compile(r"^ ❯ (?:(\S+) )?([^\s:]+):\d+:\d+$", re.MULTILINE)

_MOCHA_PASSING = re.compile(r"^[ \t]+(\d+) passing \(", re.MULTILINE)
_MOCHA_FAILING = re.compile(r"^[ \t]+(\d+) failing$", re.MULTILINE)
_MOCHA_HEAD = re.compile(r"^  \d+\) ", re.MULTILINE)

_TAP_LINE = re.compile(r"^([ \t]*)(?:# Subtest: (.+)|not ok \d+ - (.+))$", re.MULTILINE)
_TAP_COUNT = re.compile(r"^# (pass|fail) (\d+)$", re.MULTILINE)

_TSC = re.compile(
    r"^([^\s(][^(\n]*)\(\d+,\d+\): error (TS\d+): (.*)$|^([^\s:][^:\n]*):\d+:\d+ - error (TS\d+): (.*)$",
    re.MULTILINE,
)
_ESLINT_FILE = re.compile(
    r"^(/[^\n]+|[A-Za-z]:\\[^\n]+|[\w./-]+\.(?:[cm]?[jt]sx?|vue|svelte))$", re.MULTILINE
)
_ESLINT_ROW = re.compile(r"^  \d+:\d+ +(error|warning) +[^\n]+$", re.MULTILINE)
_ESLINT_DONE = re.compile(r"^✖ \d+ problems?", re.MULTILINE)


def stack_frames(text: str) -> list[Frame]:
    """The "at fn (path:line:col)" lines of a V8 stack, outermost first."""
    frames: list[Frame] = []
    for line in _AT.findall(text):
        body = line.strip()[3:]
        function: str | None = None
        if body.endswith(")") and " (" in body:
            function, body = body[:-1].rsplit(" (", 1)
        path = body.rsplit(":", 2)[0] if body.count(":") >= 2 else body
        if function and _CALL_SITE.search(function):
            function = None
        frames.append(Frame(path, function))
    frames.reverse()
    return frames


def error_and_message(lines: list[str]) -> tuple[str | None, str]:
    """The error's type (``TypeError``, ``AssertionError``; an ``expect()`` failure is an
    AssertionError) and its message, from the lines that open a failure."""
    lines = [line.strip() for line in lines if line.strip()]
    if not lines:
        return None, ""
    typed = _ERROR_LINE.match(lines[0])
    if typed:
        return typed.group(1).rsplit(".", 1)[-1], "\n".join([typed.group(2), *lines[1:]])
    if lines[0].startswith("expect("):
        return "AssertionError", "\n".join(lines)
    return None, "\n".join(lines)


def _counts(summary: str) -> tuple[int, int]:
    passed = failed = 0
    for number, word in _PAIR.findall(summary):
        if word.startswith("pass"):
            passed += int(number)
        else:
            failed += int(number)
    return passed, failed


def _message_lines(block: str) -> list[str]:
    lines: list[str] = []
    for line in block.splitlines():
        if _CODE_FRAME.match(line) or line.lstrip().startswith("at "):
            break
        lines.append(line)
    return lines[:16]


def parse_jest(text: str) -> Parse | None:
    if not mentions(text, "Tests:", "PASS ", "FAIL "):
        return None
    summary = _JEST_TESTS.search(text)
    heads = list(_JEST_HEAD.finditer(text))
    if summary is None and not heads:
        return None  # a stray "FAIL x" line is not a jest report
    files = list(_JEST_FILE.finditer(text))
    found: list[Found] = []
    for index, head in enumerate(heads):
        title = head.group(1).strip()
        if title == "Console":
            continue
        end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
        for later in (_JEST_FILE.search(text, head.end(), end), _JEST_END.search(text, head.end(), end)):
            end = later.start() if later else end
        owner = [match.group(2) for match in files if match.start() < head.start()]
        file = owner[-1] if owner else None
        block = text[head.end() : end]
        error_type, message = error_and_message(_message_lines(block))
        test_id = file if title == "Test suite failed to run" else f"{file} › {title}" if file else title
        found.append(Found(test_id, error_type, message, stack_frames(block)))
    if summary is None:
        return Parse("jest", found)
    passed, failed = _counts(summary.group(1))
    return Parse("jest", found, passed, failed)


def parse_vitest(text: str) -> Parse | None:
    if not mentions(text, "Test Files", " FAIL  "):
        return None
    if not _VITEST_MARK.search(text) and not _VITEST_HEAD.search(text):
        return None
    found: list[Found] = []
    for head in _VITEST_HEAD.finditer(text):
        rule = _VITEST_RULE.search(text, head.end())
        following = _VITEST_HEAD.search(text, head.end())
        end = min(match.start() for match in (rule, following) if match) if rule or following else len(text)
        block = text[head.end() : end]
        lines: list[str] = []
        for line in block.strip("\n").splitlines():
            if not line.strip() or line.startswith(" ❯ "):
                break
            lines.append(line)
        error_type, message = error_and_message(lines)
        frames = [Frame(path, function) for function, path in _VITEST_FRAME.findall(block)]
        frames.reverse()
        found.append(Found(head.group(1).strip(), error_type, message, frames))
    tests = last_match(_VITEST_TESTS, text)
    if tests is None:
        return Parse("vitest", found)
    passed, failed = _counts(tests.group(1))
    return Parse("vitest", found, passed, failed)


def parse_mocha(text: str) -> Parse | None:
    if not mentions(text, " passing ("):
        return None
    passing = _MOCHA_PASSING.search(text)
    if passing is None:
        return None
    failing = _MOCHA_FAILING.search(text, passing.end())
    found: list[Found] = []
    if failing:
        heads = list(_MOCHA_HEAD.finditer(text, failing.end()))
        for index, head in enumerate(heads):
            end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
            lines = text[head.end() : end].splitlines()
            rest = next((number for number, line in enumerate(lines, 1) if line.endswith(":")), len(lines))
            title = [line.strip().removesuffix(":") for line in lines[:rest]]
            message_lines: list[str] = []
            for line in lines[rest:]:
                if line.lstrip().startswith(("at ", "+ expected")) or (not line.strip() and message_lines):
                    break
                message_lines.append(line)
            error_type, message = error_and_message(message_lines)
            block = "\n".join(lines[rest:])
            found.append(Found(" ".join(title), error_type, message, stack_frames(block)))
    return Parse("mocha", found, int(passing.group(1)), int(failing.group(1)) if failing else 0)


def _tap_fields(block: str) -> tuple[dict[str, str], list[str], list[str]]:
    """The scalar fields, the error's lines and the stack's lines of a TAP failure's YAML block."""
    fields: dict[str, str] = {}
    error: list[str] = []
    stack: list[str] = []
    target: list[str] | None = None
    base: int | None = None
    for line in block.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped == "---" and base is None:
            base = indent
        elif base is None or stripped == "...":
            if base is not None:
                break
        elif indent == base and ":" in stripped:
            key, _, value = stripped.partition(":")
            fields[key] = value.strip().strip("'\"")
            target = error if key == "error" and value.strip().startswith("|") else None
            target = stack if key == "stack" else target
        elif target is not None and stripped:
            target.append(stripped)
    return fields, error, stack


def parse_node_tap(text: str) -> Parse | None:
    if not mentions(text, "# pass "):
        return None
    counts = dict(_TAP_COUNT.findall(text))
    if "pass" not in counts or "fail" not in counts:
        return None
    found: list[Found] = []
    stack: list[tuple[int, str]] = []
    for line in _TAP_LINE.finditer(text):
        indent, subtest, failed = len(line.group(1)), line.group(2), line.group(3)
        while stack and (stack[-1][0] > indent or (subtest and stack[-1][0] == indent)):
            stack.pop()
        if subtest:
            stack.append((indent, subtest))
            continue
        end = text.find("\n" + line.group(1) + "  ...", line.end())
        fields, error, frames_text = _tap_fields(text[line.end() : end if end > 0 else len(text)])
        if fields.get("failureType") == "subtestsFailed" or fields.get("type") == "suite":
            continue
        names = [name for _, name in stack] or [failed]
        frames = [_tap_frame(entry) for entry in reversed(frames_text)]
        message = "\n".join(error) or fields.get("error", "")
        found.append(Found(" > ".join(names), fields.get("name"), message, frames))
    return Parse("node", found, int(counts["pass"]), int(counts["fail"]))


def _tap_frame(entry: str) -> Frame:
    function, _, place = entry[:-1].rpartition(" (") if entry.endswith(")") else ("", "", entry)
    path = place.rsplit(":", 2)[0] if place.count(":") >= 2 else place
    return Frame(path, None if not function or _CALL_SITE.search(function) else function)


def parse_tsc(text: str) -> Parse | None:
    if "error TS" not in text:
        return None
    found = [
        Found(None, code or pretty_code, message or pretty_message, [Frame(path or pretty_path)])
        for path, code, message, pretty_path, pretty_code, pretty_message in _TSC.findall(text)
    ]
    return Parse("tsc", found) if found else None


def parse_eslint(text: str) -> Parse | None:
    if not mentions(text, "✖"):  # stylish closes every report with its count of problems
        return None
    done = _ESLINT_DONE.search(text)
    rows = list(_ESLINT_ROW.finditer(text))
    if not rows:
        return Parse("eslint") if done else None
    files = list(_ESLINT_FILE.finditer(text))
    found: list[Found] = []
    for row in rows:
        if row.group(1) != "error":
            continue
        owner = [match.group(1) for match in files if match.start() < row.start()]
        parts = re.split(r"\s{2,}", row.group(0).strip())
        message, rule = (parts[2], parts[3] if len(parts) > 3 else None) if len(parts) > 2 else ("", None)
        found.append(Found(None, rule, message, [Frame(owner[-1])] if owner else []))
    return Parse("eslint", found)
