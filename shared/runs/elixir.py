"""Elixir: ExUnit (mix test) and the compiler's errors."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, last_match

_COUNTS = re.compile(
    r"^(?:\d+ doctests?, )?(?:\d+ propert(?:y|ies), )?(\d+) tests?, (\d+) failures?"
    r"(?:, (\d+) (?:excluded|skipped|invalid))*",
    re.MULTILINE,
)
_EXTRA = re.compile(r"(\d+) (?:excluded|skipped|invalid)")
_HEAD = re.compile(r"^  \d+\) (.+ \(\S+\))$", re.MULTILINE)
_END = re.compile(r"^(?:Finished in |\.*$)", re.MULTILINE)
_RAISED = re.compile(r"^\*\* \(([\w.]+)\) (.*)$")
_FRAME = re.compile(r"^[ \t]+(?:\([\w.-]+ [\w.+-]+\) )?([^\s:(][^:\n]*\.exs?):\d+: ([^\n]*)$", re.MULTILINE)
_COMPILE = re.compile(r"^\*\* \((\w+Error)\) ([^\s:][^:\n]*\.exs?):\d+(?::\d+)?: ([^\n]*)$", re.MULTILINE)
# Elixir >= 1.15: "error: message", a source excerpt, then "└─ lib/x.ex:2:16: Mod.fun/0".
_COMPILE_NEW = re.compile(
    r"^error: ([^\n]*)\n(?:[^\n]*\n){0,12}?[ \t]*└─ ([^\s:][^:\n]*\.exs?):\d+(?::\d+)?(?:: ([^\n]*))?$",
    re.MULTILINE,
)
_MARK = ("** (", "└─", " tests, ", " test, ")


def _frame(path: str, label: str) -> Frame:
    return Frame(path, None if label.startswith("(") else label)


def parse_exunit(text: str) -> Parse | None:
    if not any(mark in text for mark in _MARK):
        return None
    found = [Found(None, kind, message, [Frame(path)]) for kind, path, message in _COMPILE.findall(text)]
    found += [
        Found(None, None, message, [_frame(path, label)])
        for message, path, label in _COMPILE_NEW.findall(text)
    ]
    heads = list(_HEAD.finditer(text))
    for index, head in enumerate(heads):
        following = _END.search(text, head.end())
        end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
        block = text[head.end() : following.start() if following and following.start() < end else end]
        body = block.split("stacktrace:", 1)[0].splitlines()[2:]  # after the "test/x_test.exs:4" line
        lines = [line.strip() for line in body if line.strip()]
        error_type: str | None = None
        raised = _RAISED.match(lines[0]) if lines else None
        if raised:
            error_type, lines = raised.group(1).rsplit(".", 1)[-1], [raised.group(2), *lines[1:]]
        elif lines and lines[0].startswith("Assertion with"):
            error_type = "AssertionError"
        stack = block.split("stacktrace:", 1)[1] if "stacktrace:" in block else ""
        frames = [_frame(path, label) for path, label in _FRAME.findall(stack)]
        frames.reverse()
        found.append(Found(head.group(1), error_type, "\n".join(lines), frames))
    counts = last_match(_COUNTS, text)
    if counts is None:
        return Parse("exunit", found, family="elixir") if found else None
    tests, failures = int(counts.group(1)), int(counts.group(2))
    others = sum(int(number) for number in _EXTRA.findall(counts.group(0)))
    return Parse("exunit", found, tests - failures - others, failures, family="elixir")
