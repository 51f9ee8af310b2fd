"""The parsers on the edges of their formats: markers with nothing behind them, older formats,
and the shapes the real fixtures happen not to show."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from learning_memory.shared.runs import (
    classify,
    ctest,
    dotnet,
    elixir,
    go,
    javascript,
    jvm,
    php,
    python,
    python_checks,
    read_run,
    ruby,
    rust,
    swift,
)
from learning_memory.shared.runs.model import Parse

Parser = Callable[[str], Parse | None]


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (ctest.parse_ctest, "Test #1 was mentioned, nothing ran"),
        (dotnet.parse_dotnet, "Failed! but not in the console logger's words"),
        (go.parse_go, "see main.go: nothing failed"),
        (go.parse_go_lint, "main.go: fine"),
        (javascript.parse_vitest, "not a FAIL  line"),
        (javascript.parse_mocha, "nothing passing (yet)"),
        (javascript.parse_node_tap, "# pass 3\n"),
        (javascript.parse_eslint, "✖ is a cross"),
        (javascript.parse_tsc, "error TS is mentioned"),
        (jvm.parse_maven, "Tests run: never"),
        (jvm.parse_gradle, "BUILD of a house"),
        (jvm.parse_javac, "error: in Main.java: nothing"),
        (python.parse_pytest, "nothing passed or failed here"),
        (python.parse_unittest, "Ran away"),
        (python.parse_traceback, 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'),
        (python_checks.parse_mypy, "error: nothing of mypy's"),
        (python_checks.parse_ruff, "Found nothing"),
        (python_checks.parse_lint_lines, "x.py: fine"),
        (ruby.parse_rspec, "an example"),
        (ruby.parse_minitest, "1 runs, 1 assertions, in words only"),
        (ruby.parse_rubocop, "a: C: b"),
        (rust.parse_cargo, "error[E is half a code"),
        (swift.parse_swift, "Executed nothing"),
        (ctest.parse_gcc, "x.c:1:1: warning: only a warning, error: "),
        (elixir.parse_exunit, "** (nothing)"),
    ],
)
def test_markers_without_a_report_read_nothing(parser: Parser, text: str) -> None:
    assert parser(text) is None


def test_reports_without_their_closing_counts() -> None:
    jest = javascript.parse_jest(
        "FAIL src/a.test.js\n  ● Console\n\n    console.log\n      hi\n\n  ● a › b\n\n    Error: boom\n"
    )
    assert jest is not None and [f.test_id for f in jest.found] == ["src/a.test.js › a › b"]
    assert jest.passed is None
    vitest = javascript.parse_vitest(" FAIL  src/a.test.ts > b\nError: boom\n ❯ src/a.ts:1:2\n")
    assert vitest is not None and vitest.found[0].error_type == "Error" and vitest.passed is None
    tests = ctest.parse_ctest("1/1 Test #1: a ..........***Timeout  1.50 sec\n")
    assert tests is not None and tests.passed is None and tests.found[0].error_type == "Timeout"
    eslint = javascript.parse_eslint("✖ 0 problems\n")
    assert eslint is not None and eslint.found == []
    assert javascript.error_and_message([" ", ""]) == (None, "")


def test_go_a_failing_test_without_a_message() -> None:
    parsed = go.parse_go("--- FAIL: TestQuiet (0.00s)\nFAIL\tpkg\t0.01s\n")
    assert isinstance(parsed, Parse)
    assert [(f.test_id, f.message) for f in parsed.found] == [("TestQuiet", "failed")]


def test_rust_older_panics_and_cargos_own_closing_errors() -> None:
    parsed = rust.parse_cargo(
        "thread 'main' panicked at 'boom', src/main.rs:2:5\n"
        "error: could not compile `x` due to previous error\n --> src/main.rs:1:1\n"
    )
    assert parsed is not None
    assert [(f.test_id, f.error_type, f.message, f.frames[0].path) for f in parsed.found] == [
        (None, "panic", "boom", "src/main.rs")
    ]


def test_pytest_sections_without_an_error_line_or_a_summary() -> None:
    text = (
        "==== ERRORS ====\n"
        "____ ERROR at setup of test_x ____\n"
        "file /w/tests/test_x.py, line 3\n  fixture 'db' not found\n"
        "==== 1 error in 0.01s ====\n"
    )
    parsed = python.parse_pytest(text)
    assert parsed is not None
    assert [(f.test_id, f.error_type, f.message) for f in parsed.found] == [
        ("test_x", None, "file /w/tests/test_x.py, line 3")
    ]


def test_unittest_skips_and_unexpected_successes() -> None:
    text = (
        "UNEXPECTED SUCCESS: test_y (m.T.test_y)\n" + "-" * 70 + "\n\n" + "=" * 70 + "\n"
        "Ran 4 tests in 0.01s\n\nFAILED (skipped=1, expected failures=1, unexpected successes=1)\n"
    )
    parsed = python.parse_unittest(text)
    assert parsed is not None and (parsed.passed, parsed.failed) == (1, 1)
    assert [(f.test_id, f.message) for f in parsed.found] == [("m.T.test_y", "unexpected success")]


def test_phpunit_leaves_risky_tests_out() -> None:
    text = (
        "There was 1 risky test:\n\n1) T::testR\nThis test did not perform any assertions\n\n"
        "OK, but incomplete, skipped, or risky tests!\nTests: 2, Assertions: 1, Risky: 1.\n"
    )
    parsed = php.parse_phpunit(text)
    assert parsed is not None and parsed.found == [] and (parsed.passed, parsed.failed) == (2, 0)


def test_swift_on_macos_names_tests_as_on_linux() -> None:
    text = (
        "/Users/ann/p/Tests/T.swift:6: error: -[CalcTests.CalcTests testAdd] : XCTAssertEqual failed: "
        '("5") is not equal to ("4")\n'
        "Test Case '-[CalcTests.CalcTests testAdd]' failed (0.001 seconds).\n"
        "\t Executed 1 test, with 1 failure (0 unexpected) in 0.001 (0.001) seconds\n"
    )
    outcome = read_run("swift test", text, 1, worktree="/Users/ann/p")
    assert [(f.test_id, f.frame) for f in outcome.failures] == [("CalcTests.testAdd", "Tests/T.swift")]
    assert (outcome.tests_passed, outcome.tests_failed) == (0, 1)


def test_elixir_compile_errors_in_the_newer_format() -> None:
    text = (
        "error: undefined function undefined_fun/1 (expected Broken to define such a function)\n"
        "  │\n2 │   def run, do: undefined_fun(1)\n  │                ^\n  │\n"
        "  └─ lib/broken.ex:2:16: Broken.run/0\n"
    )
    outcome = read_run("mix compile", text, 1, worktree="/w")
    assert [(f.error_type, f.frame) for f in outcome.failures] == [(None, "lib/broken.ex:Broken.run/0")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest > out.txt", ("test", "pytest")),
        ("FOO=1 BAR=2", ("other", None)),
        ("bash -x run.sh", ("other", None)),
        ("sh -c", ("other", None)),
    ],
)
def test_classify_edges(command: str, expected: tuple[str, str | None]) -> None:
    assert classify(command) == expected


def test_a_stray_fail_line_is_not_a_jest_report() -> None:
    outcome = read_run("make check", "FAIL lint stage\nmake: *** [check] Error 1\n", 2)
    assert (outcome.runner, outcome.failures, outcome.last_error) == ("make", [], "FAIL lint stage")
