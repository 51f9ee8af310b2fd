"""The JVM: Maven Surefire, Gradle, javac (and kotlinc through Gradle)."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_LEVEL = re.compile(r"^\[(?:INFO|ERROR|WARNING|WARN|DEBUG)\] ?", re.MULTILINE)
_SUREFIRE_MARK = re.compile(r"Tests run: \d+, Failures: \d+|COMPILATION ERROR|\.java:\[\d+,\d+\] ")
# Surefire 3 ("pkg.Class.method -- Time elapsed: ... <<< FAILURE!") and 2 ("method(pkg.Class)  Time ...").
_SUREFIRE_TEST = re.compile(
    r"^(?:([\w.$]+)\.([\w$\[\]]+) -- |([\w$\[\]]+)\(([\w.$]+)\)[ \t]+)"
    r"Time elapsed:[^\n]*<<< (?:FAILURE|ERROR)!$",
    re.MULTILINE,
)
_TOTAL = re.compile(r"^Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)$", re.MULTILINE)
_MAVEN_COMPILE = re.compile(r"^(\S[^\n]*?\.(?:java|kt|scala)):\[\d+,\d+\] ([^\n]*)$", re.MULTILINE)
_EXCEPTION = re.compile(r"^((?:[\w$]+\.)*[\w$]+)(?:: ([^\n]*))?$")
_AT = re.compile(r"^[ \t]+at (?:[\w.-]+//)?([\w$.<>]+)\(([^)\n]*)\)$", re.MULTILINE)

_GRADLE_TEST = re.compile(r"^([\w.$]+) > ([^\n]+?) FAILED$", re.MULTILINE)
_GRADLE_CAUSE = re.compile(r"^    ((?:[\w$]+\.)+[\w$]+)(?:: ([^\n]*?))?(?: at ([\w$]+\.\w+):\d+)?$")
_GRADLE_COUNTS = re.compile(r"^(\d+) tests? completed, (\d+) failed(?:, (\d+) skipped)?", re.MULTILINE)
_GRADLE_MARK = re.compile(
    r"^> Task :|^BUILD (?:FAILED|SUCCESSFUL)|tests? completed, \d+ failed", re.MULTILINE
)
_JAVAC = re.compile(r"^(\S[^\n]*?\.java):\d+: error: ([^\n]*)$", re.MULTILINE)
_KOTLINC = re.compile(r"^e: (?:file://)?([^\n]*?\.kts?):\d+:\d+:? ([^\n]*)$", re.MULTILINE)


def _frames(block: str, package: str) -> list[Frame]:
    """The stack's frames in the test's own packages, as "com/example/Calc.java" + method."""
    frames: list[Frame] = []
    for method, place in _AT.findall(block):
        owner, _, name = method.rpartition(".")
        if not owner.startswith(package):
            continue
        file = place.split(":", 1)[0]
        folder = owner.rsplit(".", 1)[0].replace(".", "/") if "." in owner else ""
        frames.append(Frame(f"{folder}/{file}" if folder else file, name))
    frames.reverse()
    return frames


def _own_package(test_class: str) -> str:
    parts = test_class.split(".")[:-1]
    return ".".join(parts[:2]) if parts else test_class


def parse_maven(text: str) -> Parse | None:
    if not mentions(text, "Tests run:", "COMPILATION ERROR", ".java:["):
        return None
    if not _SUREFIRE_MARK.search(text):
        return None
    text = _LEVEL.sub("", text)
    found: list[Found] = []
    for path, message in _MAVEN_COMPILE.findall(text):
        found.append(Found(None, None, message, [Frame(path)], family="javac"))
    tests = list(_SUREFIRE_TEST.finditer(text))
    for index, test in enumerate(tests):
        test_class, method = test.group(1, 2) if test.group(1) else test.group(4, 3)
        end = tests[index + 1].start() if index + 1 < len(tests) else len(text)
        block = text[test.end() + 1 : end]
        first = block.split("\n", 1)[0]
        exception = _EXCEPTION.match(first)
        error_type = exception.group(1).rsplit(".", 1)[-1] if exception else None
        message = (exception.group(2) or "") if exception else first
        frames = _frames(block, _own_package(test_class))
        found.append(Found(f"{test_class}.{method}", error_type, message, frames))
    totals = [[int(number) for number in total] for total in _TOTAL.findall(text)]
    run = sum(total[0] for total in totals)
    failed = sum(total[1] + total[2] for total in totals)
    skipped = sum(total[3] for total in totals)
    if not found and not totals:
        return None
    return Parse("maven", found, run - failed - skipped if totals else None, failed if totals else None)


def parse_gradle(text: str) -> Parse | None:
    if not mentions(text, "> Task :", "BUILD ", "tests completed"):
        return None
    if not _GRADLE_MARK.search(text):
        return None
    found = _compile_errors(text)
    for test in _GRADLE_TEST.finditer(text):
        cause_line = text[test.end() + 1 :].split("\n", 1)[0]
        cause = _GRADLE_CAUSE.match(cause_line)
        error_type = cause.group(1).rsplit(".", 1)[-1] if cause else None
        frames = [Frame(cause.group(3))] if cause and cause.group(3) else []
        message = (cause.group(2) or "") if cause else ""
        found.append(Found(f"{test.group(1)}.{test.group(2)}", error_type, message, frames))
    counts = _GRADLE_COUNTS.search(text)
    if counts is None:
        return Parse("gradle", found)
    total, failed, skipped = int(counts.group(1)), int(counts.group(2)), int(counts.group(3) or 0)
    return Parse("gradle", found, total - failed - skipped, failed)


def _compile_errors(text: str) -> list[Found]:
    found: list[Found] = []
    if ".java:" in text:
        found += [
            Found(None, None, message, [Frame(path)], family="javac")
            for path, message in _JAVAC.findall(text)
        ]
    if "e: " in text:
        kotlin = _KOTLINC.findall(text)
        found += [Found(None, None, message, [Frame(path)], family="kotlinc") for path, message in kotlin]
    return found


def parse_javac(text: str) -> Parse | None:
    found = _compile_errors(text) if "error: " in text else []
    return Parse("javac", found) if found else None
