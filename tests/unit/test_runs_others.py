"""dotnet, Swift, ExUnit, PHPUnit, CTest and gcc outputs."""

from __future__ import annotations

from tests.unit.runs_fixtures import DOTNET, ELIXIR, PHP, SWIFT, C, read, rows


def test_dotnet_test() -> None:
    outcome = read("dotnet/test_failures.txt", "dotnet test", 1, DOTNET)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("dotnet", 2, 2)
    assert rows(outcome) == [
        (
            "Calc.Tests.CalcTests.Adds",
            "Assert.Equal",
            "Assert.Equal() Failure: Values differ Expected: <n> Actual: <n>",
            "Calc.Tests/CalcTests.cs:CalcTests.Adds",
        ),
        (
            "Calc.Tests.CalcTests.Divides",
            "DivideByZeroException",
            "Attempted to divide by zero.",
            "Calc/Calculator.cs:Calculator.Divide",
        ),
    ]


def test_dotnet_build_errors_printed_twice_are_kept_once() -> None:
    outcome = read("dotnet/build_errors.txt", "dotnet build", 1, DOTNET)
    assert (outcome.kind, outcome.runner) == ("build", "dotnet")
    assert rows(outcome) == [
        (None, "CS0029", "Cannot implicitly convert type 'string' to 'int'", "Calc/Calculator.cs"),
        (None, "CS0103", "The name 'missing' does not exist in the current context", "Calc/Calculator.cs"),
    ]


def test_swift() -> None:
    xctest = read("swift/xctest_linux.txt", "swift test", 1, SWIFT)
    assert (xctest.runner, xctest.tests_passed, xctest.tests_failed) == ("swift", 1, 2)
    assert rows(xctest) == [
        (
            "CalcTests.testAdd",
            "XCTAssertEqual",
            '("<n>") is not equal to ("<n>")',
            "Tests/CalcTests/CalcTests.swift",
        ),
        ("CalcTests.testName", "XCTAssertTrue", "name is empty", "Tests/CalcTests/CalcTests.swift"),
    ]
    testing = read("swift/swift_testing.txt", "swift test", 1, SWIFT)
    assert (testing.tests_passed, testing.tests_failed) == (1, 1)
    assert rows(testing) == [
        ("add()", "Expectation", "Expectation failed: (add(<n>, <n>) → <n>) == <n>", "CalcTests.swift")
    ]
    build = read("swift/build_errors.txt", "swift build", 1, SWIFT)
    assert rows(build) == [
        (
            None,
            None,
            "cannot convert return expression of type 'String' to return type 'Int'",
            "Sources/Calc/Calc.swift",
        ),
        (None, None, "cannot find 'missing' in scope", "Sources/Calc/Calc.swift"),
    ]


def test_exunit() -> None:
    outcome = read("exunit/failures.txt", "mix test", 2, ELIXIR)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("exunit", 1, 3)
    assert [(f.test_id, f.error_type, f.frame) for f in outcome.failures] == [
        ("test adds numbers (CalcTest)", "AssertionError", "test/calc_test.exs"),
        ("test parses integers (CalcTest)", "ArgumentError", "lib/calc.ex:Calc.parse/1"),
        ("test fetch missing key (CalcTest)", "KeyError", "lib/calc.ex:Calc.fetch/2"),
    ]
    assert outcome.failures[2].message.startswith("key :b not found in: %{a: <n>}")
    compile_error = read("exunit/compile_error.txt", "mix compile", 1, ELIXIR)
    assert [(f.error_type, f.frame) for f in compile_error.failures] == [("CompileError", "lib/broken.ex")]
    passing = read("exunit/passed.txt", "mix test test/calc_test.exs:18", 0, ELIXIR)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)  # 3 excluded


def test_phpunit() -> None:
    outcome = read("phpunit/failures.txt", "vendor/bin/phpunit tests", 2, PHP)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("phpunit", 1, 3)
    assert rows(outcome)[:2] == [
        ("CalcTest::testDiv", "DivisionByZeroError", "Division by zero", "src/Calc.php"),
        ("CalcTest::testAdd", None, "Failed asserting that <n> is identical to <n>.", "tests/CalcTest.php"),
    ]
    passing = read("phpunit/passed.txt", "phpunit --filter testOk tests", 0, PHP)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)


def test_ctest() -> None:
    plain = read("ctest/failures.txt", "ctest", 8, C)
    assert (plain.runner, plain.tests_passed, plain.tests_failed) == ("ctest", 1, 3)
    assert rows(plain) == [
        ("adds", "Failed", "failed", None),
        ("parses", "Subprocess aborted", "subprocess aborted", None),
        ("crashes", "SegFault", "segfault", None),
    ]
    verbose = read("ctest/output_on_failure.txt", "cd build && ctest --output-on-failure", 8, C)
    assert rows(verbose)[:2] == [
        ("adds", "Failed", "calc_test.c:<n>: add(<n>, <n>) expected <n>, got <n>", "calc_test.c"),
        (
            "parses",
            "Subprocess aborted",
            'calc_test: calc_test.c:<n>: main: Assertion `atoi("<n>") == <n>\' failed.',
            "calc_test.c",
        ),
    ]
    passing = read("ctest/passed.txt", "ctest -R divides", 0, C)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)


def test_gcc_through_make() -> None:
    outcome = read("gcc/make_errors.txt", "make", 2, C)
    assert (outcome.kind, outcome.runner) == ("build", "gcc")  # make ran gcc: its parser read the output
    assert rows(outcome) == [
        (None, None, "‘undefined_var’ undeclared (first use in this function)", "calc_test.c:add")
    ]
