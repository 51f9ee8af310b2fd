"""Which Bash commands run tests, builds or linters, and which runner: from the command's own words.

``pip install pytest``, ``cat pytest.ini`` and ``git commit -m "make test pass"`` run no tests:
only the word in command position counts, after the words that merely stand before a command
(``FOO=1``, ``time``, ``uv run``, ``npx``, ``python -m``, a venv's ``bin/``). A compound command
(``cd app && pytest -q``) is read segment by segment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from learning_memory.shared.contracts.capture import RunKind
from learning_memory.shared.runs.commands import (
    DIRECT,
    LAUNCHERS,
    PREFIXES,
    SHELLS,
    SUBCOMMANDS,
    VALUE_OPTIONS,
    WRAPPER_PAIRS,
    Run,
)

_TOKEN = re.compile(
    r"""(\s+)|(\d*[<>]&\d*-?|&>>?)|(&&|\|\||[;&|()\n])|('[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\;&|()<>]+|[<>])|(['"])"""
)
_REDIRECT = re.compile(r"^(?:\d*[<>]|&>)")
_BARE_REDIRECT = re.compile(r"^(?:\d*(?:>>?|<)|&>>?)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(?:python[0-9.]*|py|pypy[0-9.]*)$")
# A project's own test script: ./test.sh, scripts/run_tests, bin/unit-tests.
_TEST_SCRIPT = re.compile(r"^(?:run[-_]?)?(?:unit[-_]?)?tests?(?:[-_.][\w-]+)*$")
_ARGUMENT = re.compile(r"^(?:-.*|\d+(?:\.\d+)?[smhd]?)$")
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_MAKES = frozenset({"make", "just", "gmake"})
# Tools given several goals at once (``mvn clean test``): the weightiest goal decides.
_MULTI_GOAL = frozenset({"mvn", "mvnw", "gradle", "gradlew"})
_ORDER: tuple[RunKind, ...] = ("test", "build", "lint")


def _segments(command: str) -> list[list[str]]:
    """The command's simple commands, each as its words with quotes and redirections removed (no
    shell expansion: only the words as written count)."""
    segments: list[list[str]] = [[]]
    word: str | None = None
    for space, redirect, operator, piece, quote in _TOKEN.findall(command):
        if space or operator:
            if word is not None:
                segments[-1].append(word)
                word = None
            if operator:
                segments.append([])
            continue
        if piece in ("<", ">") and word is not None and not word.isdigit():
            segments[-1].append(word)  # "pytest>out.txt": the redirection starts a word of its own
            word = None
        text = redirect or quote or (piece[1:-1] if piece[0] in "'\"" else piece.removeprefix("\\"))
        word = text if word is None else word + text
    if word is not None:
        segments[-1].append(word)
    return [kept for kept in map(_without_redirects, segments) if kept]


def _without_redirects(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif _REDIRECT.match(word):
            skip = bool(_BARE_REDIRECT.match(word))
        else:
            kept.append(word)
    return kept


def _skip_options(words: list[str], index: int) -> int:
    while index < len(words) and (_ARGUMENT.match(words[index]) or _ASSIGNMENT.match(words[index])):
        index += 2 if words[index] in VALUE_OPTIONS else 1
    return index


def _command_words(words: list[str]) -> list[str]:
    """``words`` from the word that names the command on: assignments, prefixes (``time``,
    ``timeout 60``), wrappers (``uv run``, ``npx``) and ``python -m`` dropped."""
    index = 0
    while index < len(words):
        head = words[index]
        if _ASSIGNMENT.match(head):
            index += 1
        elif head in PREFIXES or head in LAUNCHERS:
            index = _skip_options(words, index + 1)
        elif tuple(words[index : index + 2]) in WRAPPER_PAIRS:
            index = _skip_options(words, index + 2)
        elif _PYTHON.match(head.rsplit("/", 1)[-1]) and "-m" in words[index + 1 : index + 4]:
            index = words.index("-m", index + 1) + 1
        else:
            return words[index:]
    return []


def _plain(words: list[str]) -> list[str]:
    """The words that are not options nor option values (``+nightly`` toolchains skipped too)."""
    plain: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith(("-", "+")):
            skip = word in VALUE_OPTIONS
        else:
            plain.append(word)
    return plain


def weightiest(runs: Sequence[Run | None]) -> Run | None:
    """The run that says most of the command: a test over a build, a build over a lint."""
    for kind in _ORDER:
        for run in runs:
            if run is not None and run.kind == kind:
                return run
    return None


def segment_run(words: list[str], depth: int = 0) -> Run | None:
    """The run one simple command is, or None when it runs no test, build or linter."""
    words = _command_words(words)
    if not words:
        return None
    path, rest = words[0], words[1:]
    head = path.rsplit("/", 1)[-1]
    plain = _plain(rest)
    first = plain[0] if plain else ""
    if head in SHELLS:
        if depth == 0 and "-c" in rest[:2] and rest.index("-c") + 1 < len(rest):
            return command_run(rest[rest.index("-c") + 1], depth + 1)
        return segment_run(rest, depth + 1) if depth == 0 and rest and not rest[0].startswith("-") else None
    if head in DIRECT:
        return DIRECT[head]
    if head in _PACKAGE_MANAGERS:
        if head == "bun" and first == "test":
            return Run("test", "bun")
        script = plain[1] if first == "run" and len(plain) > 1 else first
        return DIRECT.get(script) or _script_run(script, head, build=first == "run")
    if head in _MAKES:
        if not plain:
            return Run("build", head)
        return weightiest([_script_run(target, head, build=True) for target in plain])
    if head in _MULTI_GOAL:
        return weightiest([SUBCOMMANDS[head].get(goal) for goal in plain])
    if head == "node":
        return Run("test", "node") if "--test" in rest else None
    if _PYTHON.match(head):
        return _python_script(plain)
    if head == "ruby":
        return Run("test", "minitest") if any(_is_ruby_test(word) for word in rest) else None
    if head == "php":
        if plain[:2] == ["artisan", "test"]:
            return Run("test", "phpunit")
        return segment_run(plain, depth + 1) if plain and plain[0].endswith("phpunit") else None
    if head == "cmake":
        return Run("build", "cmake") if "--build" in rest else None
    if head in SUBCOMMANDS:
        return SUBCOMMANDS[head].get(first)
    if ("/" in path or "." in head) and _TEST_SCRIPT.match(head):
        return Run("test", None)  # ./test.sh, scripts/run_tests: the project's own, read by every parser
    return None


def _script_run(script: str, runner: str, *, build: bool) -> Run | None:
    """``npm run test:unit``, ``make check``: the script's or target's name says what it runs."""
    name = script.split(":", 1)[0]
    if name in ("test", "tests", "check", "spec", "t") or name.startswith(("test", "check")):
        return Run("test", runner)
    if build and name.startswith(("build", "compile", "typecheck", "type-check", "types", "tsc", "all")):
        return Run("build", runner)
    if name.startswith(("lint", "eslint", "fmt-check", "format-check", "style")):
        return Run("lint", runner)
    return None


def _python_script(plain: list[str]) -> Run | None:
    script = plain[0] if plain else ""
    if script.endswith(("manage.py", "setup.py")) and plain[1:2] == ["test"]:
        return Run("test", "unittest")  # Django's and setuptools' runners print unittest's report
    name = script.rsplit("/", 1)[-1]
    if name.startswith(("test_", "tests.py", "runtests", "run_tests")):
        return Run("test", None)
    return None


def _is_ruby_test(word: str) -> bool:
    return (word.startswith("-I") and "test" in word) or word.endswith("_test.rb")


def command_runs(command: str, depth: int = 0) -> list[Run]:
    """Every run in the command, in the order of its segments."""
    found = (segment_run(words, depth) for words in _segments(command))
    return [run for run in found if run is not None]


def command_run(command: str, depth: int = 0) -> Run | None:
    return weightiest(command_runs(command, depth))


def classify(command: str) -> tuple[RunKind, str | None]:
    """The command's kind and runner: a test run wins over a build, a build over a lint."""
    run = command_run(command)
    return (run.kind, run.runner) if run else ("other", None)
