""".NET: dotnet test (VSTest's console logger) and the compilers' errors of dotnet build / msbuild."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_MARK = re.compile(
    r"^[ \t]*(?:Failed|Passed)![ \t]+-[ \t]+Failed:|^[ \t]*Failed [\w.]+|\): error [A-Z]+\d+: ", re.MULTILINE
)
_BUILD_MARK = re.compile(r"\): error (?!TS)[A-Z]+\d+: ")
_TEST = re.compile(r"^[ \t]*Failed ([^\s\[]+)(?: \[[^\]\n]*\])?$", re.MULTILINE)
_SECTION = re.compile(r"^[ \t]*(Error Message|Stack Trace|Standard Output Messages):$", re.MULTILINE)
_FRAME = re.compile(r"^[ \t]+at ([^\n]+?) in ([^\n]+?):line \d+$", re.MULTILINE)
_EXCEPTION = re.compile(r"^((?:[\w`]+\.)*\w+(?:Exception|Error)) : (.*)$")
_ASSERT = re.compile(r"^(Assert\.\w+)(?:\(\))? (?:Failure|failed)")
_TOTALS = re.compile(
    r"^[ \t]*(?:Failed|Passed)![ \t]+-[ \t]+Failed:[ \t]*(\d+), Passed:[ \t]*(\d+)", re.MULTILINE
)
# C#, F#, VB and MSBuild errors; TypeScript's own codes are tsc's.
_BUILD = re.compile(
    r"^[ \t]*([^\s(][^(\n]*)\(\d+,\d+\): error ((?!TS)[A-Z]+\d+): ([^\n]*?)(?: \[[^\]\n]*\])?$", re.MULTILINE
)


def _function(call: str) -> str:
    name = call.split("(", 1)[0]
    return ".".join(name.split(".")[-2:])


def parse_dotnet(text: str) -> Parse | None:
    if not mentions(text, "Failed!", "Passed!", "Error Message:") and not _BUILD_MARK.search(text):
        return None
    if not _MARK.search(text):
        return None
    found = [Found(None, code, message, [Frame(path)]) for path, code, message in _BUILD.findall(text)]
    tests = list(_TEST.finditer(text))
    for index, test in enumerate(tests):
        end = tests[index + 1].start() if index + 1 < len(tests) else len(text)
        block = text[test.end() : end]
        sections = list(_SECTION.finditer(block))
        message_lines: list[str] = []
        if sections and sections[0].group(1) == "Error Message":
            stop = sections[1].start() if len(sections) > 1 else len(block)
            message_lines = [
                line.strip() for line in block[sections[0].end() : stop].splitlines() if line.strip()
            ]
        first = message_lines[0] if message_lines else ""
        typed = _EXCEPTION.match(first)
        asserted = _ASSERT.match(first)
        error_type = typed.group(1).rsplit(".", 1)[-1] if typed else asserted.group(1) if asserted else None
        if typed:
            message_lines[0] = typed.group(2)
        frames = [Frame(path, _function(call)) for call, path in _FRAME.findall(block)]
        frames.reverse()
        found.append(Found(test.group(1), error_type, "\n".join(message_lines), frames))
    totals = _TOTALS.findall(text)
    if not found and not totals:
        return None
    failed = sum(int(bad) for bad, _ in totals)
    passed = sum(int(good) for _, good in totals)
    return Parse("dotnet", found, passed if totals else None, failed if totals else None)
