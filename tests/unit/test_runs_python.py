"""pytest, unittest, tracebacks, mypy, ruff, flake8 and pylint outputs, as read by shared.runs."""

from __future__ import annotations

import pytest

from learning_memory.shared.runs.python import type_and_message
from tests.unit.runs_fixtures import PYTHON, read, rows

PYTEST_LONG = [
    (
        "tests/test_setup.py::test_query",
        "ConnectionError",
        "cannot reach db at <n>:<n>",
        "tests/test_setup.py:database",
    ),
    (
        "tests/test_calc.py::test_add",
        "AssertionError",
        "assert <n> == <n> + where <n> = add(<n>, <n>)",
        "tests/test_calc.py:test_add",
    ),
    ("tests/test_calc.py::test_ratio", "ZeroDivisionError", "division by zero", "src/app/calc.py:ratio"),
    (
        "tests/test_calc.py::test_withdraw",
        "ValueError",
        "insufficient funds: balance <n>, asked <n>",
        "src/app/calc.py:withdraw",
    ),
    (
        "tests/test_calc.py::test_load",
        "JSONDecodeError",
        "Expecting property name enclosed in double quotes: line <n> column <n> (char <n>)",
        "src/app/calc.py:load",
    ),
    (
        "tests/test_calc.py::test_dict",
        "AssertionError",
        "assert {'a': <n>, 'b': <n>} == {'a': <n>, 'b': <n>} Omitting <n> identical items, use -vv to show"
        " Differing items: {'b': <n>} != {'b': <n>} Use -v to get more diff",
        "tests/test_calc.py:test_dict",
    ),
    (
        "tests/test_calc.py::test_param[3]",
        "AssertionError",
        "assert <n> < <n>",
        "tests/test_calc.py:test_param",
    ),
    (
        "tests/test_calc.py::TestGroup::test_method",
        "AssertionError",
        "assert 'HELLO' == 'Hello' - Hello + HELLO",
        "tests/test_calc.py:test_method",
    ),
    (
        "tests/test_calc.py::test_missing",
        "FileNotFoundError",
        "[Errno <n>] No such file or directory: '/nonexistent/file.json'",
        "tests/test_calc.py:test_missing",
    ),
    (
        "tests/test_setup.py::test_raises",
        "Failed",
        "DID NOT RAISE KeyError",
        "tests/test_setup.py:test_raises",
    ),
]


def test_pytest_long_tracebacks() -> None:
    outcome = read("pytest/long.txt", "pytest tests/", 1, PYTHON)
    assert (outcome.kind, outcome.runner, outcome.passed) == ("test", "pytest", False)
    assert (outcome.tests_passed, outcome.tests_failed) == (4, 10)  # 9 failed + 1 error
    assert rows(outcome) == PYTEST_LONG
    assert outcome.last_error is None


@pytest.mark.parametrize("name", ["pytest/quiet.txt", "pytest/tb_short.txt"])
def test_pytest_quiet_and_short_tracebacks_read_the_same(name: str) -> None:
    long = read("pytest/long.txt", "pytest", 1, PYTHON)
    other = read(name, "python -m pytest -q", 1, PYTHON)
    assert rows(other) == PYTEST_LONG
    assert [f.signature for f in other.failures] == [f.signature for f in long.failures]


def test_pytest_short_summary_only() -> None:
    """``--tb=no``: the short summary is all there is, its messages cut by the terminal's width."""
    outcome = read("pytest/tb_no.txt", "pytest -q --tb=no", 1, PYTHON)
    assert (outcome.tests_passed, outcome.tests_failed) == (4, 10)
    assert rows(outcome)[:3] == [
        ("tests/test_calc.py::test_add", "AssertionError", "assert <n> == <n>", None),
        ("tests/test_calc.py::test_ratio", "ZeroDivisionError", "division by zero", None),
        ("tests/test_calc.py::test_withdraw", "ValueError", "insufficient funds: ba", None),
    ]
    long = {f.test_id: f.signature for f in read("pytest/long.txt", "pytest", 1, PYTHON).failures}
    # A message the summary did not cut is the same failure as in the full report.
    assert outcome.failures[0].signature == long["tests/test_calc.py::test_add"]
    assert outcome.failures[1].signature == long["tests/test_calc.py::test_ratio"]


def test_pytest_line_tracebacks_keep_setup_errors_whole() -> None:
    outcome = read("pytest/tb_line.txt", "pytest --tb=line", 1, PYTHON)
    assert len(outcome.failures) == 10
    assert rows(outcome)[0] == (
        "tests/test_setup.py::test_query",
        "ConnectionError",
        "cannot reach db at <n>:<n>",
        None,
    )


def test_pytest_collection_error() -> None:
    outcome = read("pytest/collection_error.txt", "pytest -q tests/test_broken.py", 2, PYTHON)
    assert rows(outcome) == [
        (
            "tests/test_broken.py",
            "ImportError",
            "cannot import name 'nothing_here' from 'app.calc' (tests/../src/app/calc.py)",
            "tests/test_broken.py:<module>",
        )
    ]
    assert (outcome.tests_passed, outcome.tests_failed) == (0, 1)


@pytest.mark.parametrize("name", ["pytest/passed_verbose.txt", "pytest/passed_quiet.txt"])
def test_pytest_passing(name: str) -> None:
    outcome = read(name, "pytest", 0, PYTHON)
    assert (outcome.passed, outcome.failures, outcome.tests_passed, outcome.tests_failed) == (True, [], 2, 0)


def test_unittest() -> None:
    outcome = read("unittest/failures.txt", "python -m unittest ut.test_ut", 1, PYTHON)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("unittest", 1, 4)
    assert rows(outcome) == [
        ("ut.test_ut.CalcTest.test_ratio", "ZeroDivisionError", "division by zero", "src/app/calc.py:ratio"),
        (
            "ut.test_ut.CalcTest.test_withdraw",
            "ValueError",
            "insufficient funds: balance <n>, asked <n>",
            "src/app/calc.py:withdraw",
        ),
        ("ut.test_ut.CalcTest.test_add", "AssertionError", "<n> != <n>", "ut/test_ut.py:test_add"),
        (
            "ut.test_ut.CalcTest.test_sub (n=2)",
            "AssertionError",
            "<n> not less than <n>",
            "ut/test_ut.py:test_sub",
        ),
    ]
    verbose = read("unittest/failures_verbose.txt", "python -m unittest -v ut.test_ut", 1, PYTHON)
    assert rows(verbose) == rows(outcome)
    passing = read("unittest/passed.txt", "python -m unittest", 0, PYTHON)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)


def test_a_scripts_traceback() -> None:
    outcome = read("negative/script_traceback.txt", "./run_tests.sh", 1, PYTHON)
    assert (outcome.kind, outcome.runner) == ("test", "python")
    assert rows(outcome) == [(None, "KeyError", "'database'", "scripts/check.py:load")]


MYPY = [
    (None, "return-value", 'Incompatible return value type (got "str", expected "int")', "src/app/typed.py"),
    (
        None,
        "arg-type",
        'Argument <n> to "add" has incompatible type "list[int]"; expected "int"',
        "src/app/typed.py",
    ),
    (None, "name-defined", 'Name "undefined_thing" is not defined', "src/app/typed.py"),
]


@pytest.mark.parametrize("name", ["mypy/errors.txt", "mypy/pretty.txt"])
def test_mypy(name: str) -> None:
    outcome = read(name, "mypy --strict src", 1, PYTHON)
    assert (outcome.kind, outcome.runner, outcome.tests_failed) == ("build", "mypy", None)
    assert rows(outcome) == MYPY


def test_mypy_passing() -> None:
    outcome = read("mypy/passed.txt", "uv run mypy src", 0, PYTHON)
    assert (outcome.passed, outcome.failures, outcome.last_error) == (True, [], None)


RUFF = [
    (None, "E501", "Line too long (<n> > <n>)", "src/app/calc.py"),
    (None, "F821", "Undefined name `undefined_thing`", "src/app/typed.py"),
    (None, "E402", "Module level import not at top of file", "src/app/typed.py"),
    (None, "F401", "`os` imported but unused", "src/app/typed.py"),
    (None, "E401", "Multiple imports on one line", "tests/conftest.py"),
    (None, "I001", "Import block is un-sorted or un-formatted", "tests/conftest.py"),
]


def test_ruff_full_and_concise_read_the_same() -> None:
    full = read("ruff/full.txt", "ruff check src tests", 1, PYTHON)
    concise = read("ruff/concise.txt", "ruff check --output-format concise src tests", 1, PYTHON)
    assert (full.kind, full.runner) == ("lint", "ruff")
    assert rows(full) == rows(concise) == RUFF
    assert [f.signature for f in full.failures] == [f.signature for f in concise.failures]


def test_ruff_format_check_and_passing() -> None:
    unformatted = read("ruff/format_check.txt", "ruff format --check src", 1, PYTHON)
    assert rows(unformatted) == [(None, "format", "file would be reformatted", "src/app/calc.py")]
    passing = read("ruff/passed.txt", "ruff check", 0, PYTHON)
    assert (passing.passed, passing.failures) == (True, [])


def test_flake8_and_pylint() -> None:
    flake8 = read("flake8/errors.txt", "flake8 src", 1, PYTHON)
    assert rows(flake8)[0] == (None, "F821", "undefined name 'undefined_thing'", "src/app/typed.py")
    assert [f.error_type for f in flake8.failures] == ["F821", "F401", "E402", "E501"]
    pylint = read("pylint/errors.txt", "pylint src/app", 30, PYTHON)
    assert pylint.runner == "pylint"
    assert (None, "E0602", "Undefined variable 'undefined_thing'", "src/app/typed.py") in rows(pylint)
    # The same message in the same file is one failure, whatever its line.
    assert len(pylint.failures) == len({f.signature for f in pylint.failures}) == 13


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("ValueError: bad", ("ValueError", "bad")),
        ("json.decoder.JSONDecodeError: Expecting", ("JSONDecodeError", "Expecting")),
        ("assert 1 == 2", ("AssertionError", "assert 1 == 2")),
        ("KeyError", ("KeyError", "")),
        ("something odd happened", (None, "something odd happened")),
    ],
)
def test_type_and_message(line: str, parsed: tuple[str | None, str]) -> None:
    assert type_and_message(line) == parsed
