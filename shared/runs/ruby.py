"""Ruby: RSpec, minitest (``rails test``, ``rake test``) and RuboCop."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, last_match, mentions

_RSPEC_COUNTS = re.compile(r"^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?", re.MULTILINE)
_RSPEC_HEAD = re.compile(r"^  \d+\) ([^\n]+)$", re.MULTILINE)
_RSPEC_END = re.compile(r"^(?:Finished in |Failed examples:|Top \d+ slowest)", re.MULTILINE)
_RSPEC_FRAME = re.compile(r"^[ \t]+# ([^\s:]+):\d+:in [`']([^'\n]+)'$", re.MULTILINE)
_RUBY_FRAME = re.compile(r"^[ \t]+([^\s:]+):\d+:in [`']([^'\n]+)'$", re.MULTILINE)
_CLASS_LINE = re.compile(r"^((?:[A-Z]\w*::)*[A-Z]\w*):$")
_CLASS_MESSAGE = re.compile(r"^((?:[A-Z]\w*::)*[A-Z]\w*): (.*)$")
_METHOD = re.compile(r"^[\w#.:?!=\[\]]+$")

_MINITEST_COUNTS = re.compile(
    r"^(\d+) (?:runs|tests), \d+ assertions, (\d+) failures, (\d+) errors(?:, (\d+) skips)?", re.MULTILINE
)
_MINITEST_HEAD = re.compile(
    r"^ *\d+\) (Failure|Error):\n([^\s\[]+)(?: \[([^\]\n]+?)(?::\d+)?\])?:\n", re.MULTILINE
)

_RUBOCOP = re.compile(
    r"^([^\s:][^:\n]*):\d+:\d+: [CWEF]: (?:\[Correctable\] )?([A-Z]\w*/\w+): ([^\n]*)$", re.MULTILINE
)
_RUBOCOP_DONE = re.compile(r"^\d+ files? inspected, (?:no|\d+) offenses?", re.MULTILINE)


def _ruby_frames(pattern: re.Pattern[str], block: str) -> list[Frame]:
    frames: list[Frame] = []
    for path, label in pattern.findall(block):
        frames.append(Frame(path, label if _METHOD.match(label) else None))
    frames.reverse()  # Ruby lists the innermost call first
    return frames


def parse_rspec(text: str) -> Parse | None:
    if not mentions(text, " example"):
        return None
    counts = _RSPEC_COUNTS.search(text)
    if counts is None:
        return None
    found: list[Found] = []
    heads = list(_RSPEC_HEAD.finditer(text, 0, counts.start()))
    for index, head in enumerate(heads):
        following = _RSPEC_END.search(text, head.end())
        end = heads[index + 1].start() if index + 1 < len(heads) else len(text)
        block = text[head.end() : following.start() if following and following.start() < end else end]
        lines = [line.strip() for line in block.splitlines()]
        lines = [line for line in lines if line and not line.startswith(("# ", "Failure/Error:"))]
        error_type: str | None = None
        if lines and _CLASS_LINE.match(lines[0]):
            error_type, lines = lines[0][:-1].rsplit("::", 1)[-1], lines[1:]
        frames = _ruby_frames(_RSPEC_FRAME, block)
        found.append(Found(head.group(1).strip(), error_type, "\n".join(lines), frames))
    examples, failures = int(counts.group(1)), int(counts.group(2))
    pending = int(counts.group(3) or 0)
    return Parse("rspec", found, examples - failures - pending, failures)


def parse_minitest(text: str) -> Parse | None:
    if not mentions(text, " assertions, "):
        return None
    counts = last_match(_MINITEST_COUNTS, text)
    if counts is None:
        return None
    found: list[Found] = []
    heads = list(_MINITEST_HEAD.finditer(text))
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else counts.start()
        block = text[head.end() : end]
        lines: list[str] = []
        for line in block.splitlines():
            if not line.strip() or _RUBY_FRAME.match(line):
                break
            lines.append(line.strip())
        error_type: str | None = "Assertion" if head.group(1) == "Failure" else None
        typed = _CLASS_MESSAGE.match(lines[0]) if lines and head.group(1) == "Error" else None
        if typed:
            error_type, lines = typed.group(1).rsplit("::", 1)[-1], [typed.group(2), *lines[1:]]
        frames = _ruby_frames(_RUBY_FRAME, block)
        if head.group(3):
            frames.append(Frame(head.group(3)))
        found.append(Found(head.group(2), error_type, "\n".join(lines), frames))
    runs, failures, errors = int(counts.group(1)), int(counts.group(2)), int(counts.group(3))
    skips = int(counts.group(4) or 0)
    return Parse("minitest", found, runs - failures - errors - skips, failures + errors)


def parse_rubocop(text: str) -> Parse | None:
    if not mentions(text, "inspected", ": C: ", ": W: ", ": E: ", ": F: "):
        return None
    found = [Found(None, cop, message, [Frame(path)]) for path, cop, message in _RUBOCOP.findall(text)]
    if not found and not _RUBOCOP_DONE.search(text):
        return None
    return Parse("rubocop", found)
