"""jest, vitest, mocha, node --test, tsc and eslint outputs, as read by shared.runs."""

from __future__ import annotations

import pytest

from tests.unit.runs_fixtures import JS, read, rows

JEST = [
    (
        "src/calc.test.js › calc › adds numbers",
        "AssertionError",
        "expect(received).toBe(expected) // Object.is equality Expected: <n> Received: <n>",
        "src/calc.test.js",
    ),
    (
        "src/calc.test.js › calc › parses json",
        "SyntaxError",
        "Expected property name or '}' in JSON at position <n>",
        "src/calc.js:parse",
    ),
    (
        "src/calc.test.js › calc › compares objects",
        "AssertionError",
        "expect(received).toEqual(expected) // deep equality - Expected - <n> + Received + <n>"
        ' Object { - "age": <n>, + "age": <n>, "name": "ann", }',
        "src/calc.test.js",
    ),
    (
        "src/calc.test.js › top level throws",
        "TypeError",
        "Cannot read properties of null (reading 'withdraw')",
        "src/calc.test.js",
    ),
]
SUITE_FAILED = (
    "src/broken.test.js",
    None,
    "Cannot find module './missing-module' from 'src/broken.test.js'",
    "src/broken.test.js",
)


def test_jest() -> None:
    outcome = read("jest/failures.txt", "npx jest src", 1, JS)
    assert (outcome.kind, outcome.runner, outcome.tests_passed, outcome.tests_failed) == (
        "test",
        "jest",
        1,
        4,
    )
    assert rows(outcome) == JEST


@pytest.mark.parametrize(
    ("name", "command"), [("jest/multi_suite.txt", "CI=true npx jest"), ("jest/npm_test.txt", "npm test")]
)
def test_jest_suite_that_failed_to_run(name: str, command: str) -> None:
    """``npm test`` says nothing of its runner: jest is recognised by its output."""
    outcome = read(name, command, 1, JS)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("jest", 2, 4)
    assert rows(outcome) == [*JEST, SUITE_FAILED]


def test_jest_passing_and_not_starting() -> None:
    passing = read("jest/passed.txt", "npx jest src/ok.test.js", 0, JS)
    assert (passing.passed, passing.tests_passed, passing.tests_failed, passing.failures) == (True, 1, 0, [])
    broken = read("jest/config_error.txt", "npx jest src", 1, JS)
    assert (broken.passed, broken.failures) == (False, [])
    assert broken.last_error == "Error: Could not find a config file based on provided values:"


VITEST = [
    (
        "vt/calc.test.js > calc > adds numbers",
        "AssertionError",
        "expected <n> to be <n> // Object.is equality",
        "vt/calc.test.js",
    ),
    (
        "vt/calc.test.js > calc > parses json",
        "SyntaxError",
        "Expected property name or '}' in JSON at position <n>",
        "src/calc.js:parse",
    ),
    (
        "vt/calc.test.js > compares objects",
        "AssertionError",
        "expected { name: 'ann', age: <n> } to deeply equal { name: 'ann', age: <n> }",
        "vt/calc.test.js",
    ),
]


def test_vitest_in_colour_and_without() -> None:
    coloured = read("vitest/failures.txt", "npx vitest run vt", 1, JS)
    assert (coloured.runner, coloured.tests_passed, coloured.tests_failed) == ("vitest", 1, 3)
    assert rows(coloured) == VITEST
    plain = read("vitest/no_color_suite_error.txt", "NO_COLOR=1 npx vitest run vt", 1, JS)
    assert (plain.tests_passed, plain.tests_failed) == (2, 3)
    assert rows(plain) == [
        (
            "vt/broken.test.js",
            "Error",
            "Cannot find module '../src/missing.js' imported from vt/broken.test.js",
            "vt/broken.test.js",
        ),
        *VITEST,
    ]
    assert [f.signature for f in plain.failures[1:]] == [f.signature for f in coloured.failures]
    passing = read("vitest/passed.txt", "npx vitest run vt/ok.test.js", 0, JS)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)


def test_mocha() -> None:
    outcome = read("mocha/failures.txt", "npx mocha mt", 3, JS)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("mocha", 1, 3)
    assert rows(outcome) == [
        ("calc adds numbers", "AssertionError", "Expected values to be strictly equal:", "mt/calc.spec.js"),
        (
            "calc parses json",
            "SyntaxError",
            "Expected property name or '}' in JSON at position <n>",
            "src/calc.js:parse",
        ),
        (
            "calc nested compares objects",
            "AssertionError",
            "Expected values to be strictly deep-equal: + actual - expected",
            "mt/calc.spec.js",
        ),
    ]


def test_node_test_runner_tap() -> None:
    outcome = read("node/failures.txt", "node --test", 1, JS)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("node", 1, 3)
    assert rows(outcome) == [
        ("adds", "AssertionError", "Expected values to be strictly equal: <n> !== <n>", "test/calc.test.js"),
        (
            "parses",
            "SyntaxError",
            "Expected property name or '}' in JSON at position <n>",
            "src/calc.js:parse",
        ),
        ("group > nested fails", "AssertionError", "<n> == <n>", "test/calc.test.js"),
    ]


TSC = [
    (None, "TS2322", "Type 'number' is not assignable to type 'string'.", "ts/app.ts"),
    (
        None,
        "TS2741",
        "Property 'age' is missing in type '{ name: string; }' but required in type 'User'.",
        "ts/app.ts",
    ),
    (None, "TS2554", "Expected <n> arguments, but got <n>.", "ts/app.ts"),
    (None, "TS2304", "Cannot find name 'missing'.", "ts/app.ts"),
]


def test_tsc_plain_and_pretty() -> None:
    plain = read("tsc/errors.txt", "npx tsc -p .", 1, JS)
    assert (plain.kind, plain.runner) == ("build", "tsc")
    assert rows(plain) == TSC
    pretty = read("tsc/pretty.txt", "npm run typecheck", 1, JS)
    assert pretty.runner == "tsc"
    assert rows(pretty) == TSC


def test_eslint() -> None:
    outcome = read("eslint/stylish.txt", "npx eslint lint", 1, JS)
    assert (outcome.kind, outcome.runner) == ("lint", "eslint")
    assert rows(outcome) == [  # the eqeqeq warning is not a failure
        (None, "no-unused-vars", "'fs' is assigned a value but never used", "lint/util.js"),
        (None, "prefer-const", "'count' is never reassigned. Use 'const' instead", "lint/util.js"),
        (None, "no-undef", "'undefinedThing' is not defined", "lint/util.js"),
    ]
    clean = read("eslint/passed.txt", "npx eslint lint/clean.js", 0, JS)
    assert (clean.passed, clean.failures) == (True, [])
