"""Rust: rustc's and clippy's errors (through cargo or not), and the panics of cargo test and nextest."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_MARK = re.compile(r"^error(?:\[E\d+\])?: |^test result: |panicked at |^[ \t]+Summary \[", re.MULTILINE)
_ERROR = re.compile(r"^error(?:\[(E\d+)\])?: ([^\n]+)\n[ \t]*--> ([^\n]+?):\d+:\d+$", re.MULTILINE)
_NEXT_DIAGNOSTIC = re.compile(r"^(?:error|warning)(?:\[\w+\])?: ", re.MULTILINE)
_LINT = re.compile(r"`-D ([\w:-]+)` implied by|#\[deny\(([\w:]+)\)\]` on by default")
# rustc >= 1.73 puts the message on the lines after the location; older ones quote it inline.
_PANIC = re.compile(
    r"^thread '([^'\n]+)'(?: \(\d+\))? panicked at (?:([^\n]+?):\d+:\d+:$|'([^\n]*)', ([^\n]+?):\d+:\d+$)",
    re.MULTILINE,
)
_PANIC_END = re.compile(r"^(?:note: |stack backtrace:|---- |failures:|[ \t]*$|──|[ \t]+(?:STDERR|STDOUT):)")
_BACKTRACE = re.compile(r"^[ \t]+\d+: ([^\n]+)\n[ \t]+at ([^\n]+?):\d+:\d+$", re.MULTILINE)
_BLOCK_END = re.compile(
    r"^(?:---- |failures:$|test result: |[ \t]+(?:PASS|FAIL|SIGSEGV|SIGABRT) \[)", re.MULTILINE
)
_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed", re.MULTILINE)
_NEXTEST = re.compile(r"^[ \t]+Summary \[[^\]\n]*\][ \t]+\d+ tests? run: ([^\n]*)$", re.MULTILINE)
_PAIR = re.compile(r"(\d+) (passed|failed)")
# cargo's own closing words say only that something before failed.
_NOT_A_CAUSE = ("could not compile", "aborting due to", "test failed, to rerun", "process didn't exit")


def _function(symbol: str) -> str | None:
    parts = [part for part in symbol.split("::") if part and not part.startswith(("{{", "<"))]
    name = parts[-1].split("<", 1)[0] if parts else ""
    return name or None


def _compile_errors(text: str) -> list[Found]:
    found: list[Found] = []
    for error in _ERROR.finditer(text):
        code, message, path = error.groups()
        if message.startswith(_NOT_A_CAUSE):
            continue
        if code is None:
            following = _NEXT_DIAGNOSTIC.search(text, error.end())
            lint = _LINT.search(text, error.end(), following.start() if following else len(text))
            code = (lint.group(1) or lint.group(2)).replace("-", "_") if lint else None
        found.append(Found(None, code, message, [Frame(path)]))
    return found


def _panics(text: str) -> list[Found]:
    found: list[Found] = []
    for panic in _PANIC.finditer(text):
        thread, path, inline, inline_path = panic.groups()
        lines = [inline] if inline is not None else []
        end = _BLOCK_END.search(text, panic.end())
        block = text[panic.end() : end.start() if end else len(text)]
        if inline is None:
            for line in block.splitlines()[1:]:
                if _PANIC_END.match(line):
                    break
                lines.append(line)
        frames = [Frame(where, _function(symbol)) for symbol, where in _BACKTRACE.findall(block)]
        frames.reverse()
        if not frames:
            frames.append(Frame(path or inline_path))
        test_id = None if thread == "main" else thread
        found.append(Found(test_id, "panic", "\n".join(lines), frames))
    return found


def parse_cargo(text: str) -> Parse | None:
    if not mentions(
        text, "error[E", "\nerror: ", "test result:", "panicked at", "Summary ["
    ) and not text.startswith("error"):
        return None
    if not _MARK.search(text):
        return None
    found = _compile_errors(text) + _panics(text)
    passed = failed = 0
    counted = False
    for ok, bad in _RESULT.findall(text):
        passed, failed, counted = passed + int(ok), failed + int(bad), True
    for summary in _NEXTEST.findall(text):
        counts = {word: int(number) for number, word in _PAIR.findall(summary)}
        passed, failed, counted = counts.get("passed", 0), counts.get("failed", 0), True
    if not found and not counted:
        return None
    return Parse("cargo", found, passed if counted else None, failed if counted else None, family="rust")
