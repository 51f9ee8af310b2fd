"""Python's checkers: mypy, ruff, and the ``path:line:col: CODE message`` lines of flake8 and pylint."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_MYPY = re.compile(r"^([^\s:][^:\n]*\.pyi?):\d+(?::\d+)?: error: (.*)$", re.MULTILINE)
_MYPY_DONE = re.compile(r"^(?:Found \d+ errors? in \d+ files?|Success: no issues found)", re.MULTILINE)
_MYPY_CODE = re.compile(r"  \[([\w-]+)\]$")
_LOCATED = re.compile(r"^\S+:\d+(?::\d+)?: ")
# ruff's default ("full") output: the rule and message, then an arrow to the place.
_RUFF_FULL = re.compile(
    r"^([A-Z]+[0-9]+|[a-z]+(?:-[a-z]+)+)(?: \[\*\])? (.+)\n[ \t]*--> ([^\n]+?):\d+:\d+$", re.MULTILINE
)
_RUFF_FORMAT = re.compile(
    r"^Would reformat: (\S+)$|^unformatted: .*\n[ \t]*--> ([^\n]+?):\d+:\d+$", re.MULTILINE
)
_RUFF_DONE = re.compile(
    r"^(?:All checks passed!|Found \d+ errors?\.|\d+ files? would be reformatted)", re.MULTILINE
)
# flake8, pycodestyle, pylint, ruff --output-format concise.
_LINT_LINE = re.compile(
    r"^([^\s:][^:\n]*\.pyi?):\d+:\d+: ([A-Z]+[0-9]+)(?::| \[\*\])? (.*?)(?: \(([a-z]+(?:-[a-z]+)+)\))?$",
    re.MULTILINE,
)
_PYLINT_CODE = re.compile(r"^[CRWEFI]\d{4}$")


def parse_mypy(text: str) -> Parse | None:
    if not mentions(text, "error: ", "Success: no issues"):
        return None
    if "error: " not in text and not _MYPY_DONE.search(text):
        return None
    found: list[Found] = []
    for error in _MYPY.finditer(text):
        message = error.group(2)
        if not _MYPY_CODE.search(message):
            message += _pretty_continuation(text, error.end())
        code = _MYPY_CODE.search(message)
        if code:
            message = message[: code.start()]
        found.append(Found(None, code.group(1) if code else None, message.strip(), [Frame(error.group(1))]))
    if not found and not _MYPY_DONE.search(text):
        return None
    return Parse("mypy", found)


def _pretty_continuation(text: str, start: int) -> str:
    """``mypy --pretty`` wraps a long message onto unindented lines that end with its code."""
    extra = ""
    for line in text[start + 1 : start + 1_000].splitlines()[:4]:
        if not line.strip() or line[0].isspace() or _LOCATED.match(line):
            break
        extra += " " + line.strip()
        if _MYPY_CODE.search(extra):
            break
    return extra


def parse_ruff(text: str) -> Parse | None:
    if not mentions(
        text, "-->", "Would reformat", "All checks passed", "Found ", ".py:", "would be reformatted"
    ):
        return None
    found = [Found(None, rule, message, [Frame(path)]) for rule, message, path in _RUFF_FULL.findall(text)]
    for would, arrow in _RUFF_FORMAT.findall(text):
        found.append(Found(None, "format", "file would be reformatted", [Frame(would or arrow)]))
    if not found:
        lines = parse_lint_lines(text)
        if lines is not None:
            return Parse("ruff", lines.found, family=lines.family)
        return Parse("ruff", family="python-lint") if _RUFF_DONE.search(text) else None
    return Parse("ruff", found, family="python-lint")


def parse_lint_lines(text: str) -> Parse | None:
    if not mentions(text, ".py:", ".pyi:"):
        return None
    found: list[Found] = []
    pylint = False
    for path, code, message, symbol in _LINT_LINE.findall(text):
        pylint = pylint or bool(symbol and _PYLINT_CODE.match(code))
        found.append(Found(None, code, message.strip(), [Frame(path)]))
    if not found:
        return None
    return Parse("pylint" if pylint else "flake8", found, family="python-lint")
