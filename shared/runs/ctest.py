"""C and C++: CTest's report, and gcc's and clang's errors (make, cmake --build, ninja)."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_TEST = re.compile(r"^[ \t]*\d+/\d+ Test[ \t]+#\d+: (\S+) \.*[ \t]*([^\n]*?)[ \t]+[\d.]+ sec$", re.MULTILINE)
_SUMMARY = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)$", re.MULTILINE)
_NEXT = re.compile(r"^[ \t]*(?:Start[ \t]+\d+:|\d+/\d+ Test[ \t]+#)|^\d+% tests passed", re.MULTILINE)
_SOURCE = r"[^\s:][^:\n]*\.(?:c|h|cc|cpp|cxx|c\+\+|hpp|hh|hxx|ipp|m|mm|cu)"
_PLACE = re.compile(r"(?:^|(?<=[\s(]))([^\s:(][^\s:]*\.(?:c|h|cc|cpp|cxx|hpp|hh|m|mm)):\d+")
_GCC = re.compile(
    r"^(" + _SOURCE + r"):(?: In (?:member )?function [‘'`]([^’'\n]+)[’']:| At top level:"
    r"|\d+:\d+: (?:fatal )?error: ([^\n]*))$",
    re.MULTILINE,
)


def _status(text: str) -> str:
    """ "***Failed" -> "Failed", "***Exception: SegFault" -> "SegFault", "Subprocess aborted***Exception:"
    -> "Subprocess aborted"."""
    parts = [part.strip() for part in text.split("***") if part.strip()]
    for part in parts:
        if part.startswith("Exception:") and part.removeprefix("Exception:").strip():
            return part.removeprefix("Exception:").strip()
    parts = [part for part in parts if not part.startswith("Exception:")]
    return parts[0] if parts else "Failed"


def parse_ctest(text: str) -> Parse | None:
    if not mentions(text, "Test #", "tests passed"):
        return None
    summary = _SUMMARY.search(text)
    tests = list(_TEST.finditer(text))
    if summary is None and not tests:
        return None
    found: list[Found] = []
    for test in tests:
        if test.group(2).strip() == "Passed":
            continue
        following = _NEXT.search(text, test.end())
        output = text[test.end() : following.start() if following else len(text)]
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        status = _status(test.group(2))
        place = _PLACE.search(lines[0]) if lines else None
        frames = [Frame(place.group(1))] if place else []
        found.append(Found(test.group(1), status, lines[0] if lines else status.lower(), frames))
    if summary is None:
        return Parse("ctest", found)
    failed, total = int(summary.group(1)), int(summary.group(2))
    return Parse("ctest", found, total - failed, failed)


def parse_gcc(text: str) -> Parse | None:
    if "error: " not in text:
        return None
    found: list[Found] = []
    function: dict[str, str | None] = {}
    for path, in_function, message in _GCC.findall(text):
        if not message:
            function[path] = in_function or None
            continue
        found.append(Found(None, None, message, [Frame(path, function.get(path))]))
    return Parse("gcc", found) if found else None
