"""RSpec, minitest, RuboCop, Maven Surefire, javac and Gradle outputs."""

from __future__ import annotations

import pytest

from tests.unit.runs_fixtures import JAVA, RUBY, read, rows


@pytest.mark.parametrize("command", ["rspec", "bundle exec rspec spec/calc_spec.rb"])
def test_rspec(command: str) -> None:
    outcome = read("rspec/failures.txt", command, 1, RUBY)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("rspec", 1, 3)
    assert rows(outcome) == [
        ("Calc adds numbers", None, "expected: <n> got: <n> (compared using ==)", "spec/calc_spec.rb"),
        (
            "Calc parses integers",
            "ArgumentError",
            'invalid value for Integer(): "12a"',
            "lib/calc.rb:Integer",
        ),
        (
            "Calc with an account withdraws",
            "ArgumentError",
            "insufficient funds: <n>",
            "lib/calc.rb:withdraw",
        ),
    ]


@pytest.mark.parametrize(
    ("name", "command"),
    [("minitest/failures.txt", "ruby -Itest test/calc_test.rb"), ("minitest/rake_test.txt", "bin/rake test")],
)
def test_minitest(name: str, command: str) -> None:
    outcome = read(name, command, 1, RUBY)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("minitest", 1, 2)
    assert sorted(rows(outcome)) == [
        ("CalcTest#test_add", "Assertion", "Expected: <n> Actual: <n>", "test/calc_test.rb"),
        ("CalcTest#test_parse", "ArgumentError", 'invalid value for Integer(): "12a"', "lib/calc.rb:Integer"),
    ]
    passing = read("minitest/passed.txt", "rails test", 0, RUBY)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 1, 0)


def test_rubocop() -> None:
    outcome = read("rubocop/offenses.txt", "bundle exec rubocop lib", 1, RUBY)
    assert (outcome.kind, outcome.runner) == ("lint", "rubocop")
    assert rows(outcome) == [
        (
            None,
            "Style/Documentation",
            "Missing top-level documentation comment for class Calc.",
            "lib/calc.rb",
        ),
        (None, "Style/FrozenStringLiteralComment", "Missing frozen string literal comment.", "lib/calc.rb"),
        (
            None,
            "Naming/MethodParameterName",
            "Method parameter must be at least <n> characters long.",
            "lib/calc.rb",
        ),
    ]


def test_maven_surefire() -> None:
    outcome = read("maven/test_failures.txt", "mvn -o -B test", 1, JAVA)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("maven", 1, 3)
    assert rows(outcome) == [
        (
            "com.example.CalcTest.adds",
            "AssertionFailedError",
            "expected: <<n>> but was: <<n>>",
            "com/example/CalcTest.java:adds",
        ),
        (
            "com.example.CalcTest.names",
            "NullPointerException",
            'Cannot invoke "String.trim()" because "s" is null',
            "com/example/Calc.java:name",
        ),
        ("com.example.CalcTest.divides", "ArithmeticException", "/ by zero", "com/example/Calc.java:divide"),
    ]
    passing = read("maven/test_passed.txt", "./mvnw test", 0, JAVA)
    assert (passing.passed, passing.tests_passed, passing.tests_failed) == (True, 4, 0)


def test_maven_and_javac_compile_errors() -> None:
    maven = read("maven/compile_error.txt", "mvn compile", 1, JAVA)
    assert (maven.kind, maven.runner) == ("build", "maven")
    assert rows(maven) == [  # each printed twice by maven, kept once
        (None, None, "bad operand types for binary operator '-'", "src/main/java/com/example/Calc.java"),
        (None, None, "cannot find symbol", "src/main/java/com/example/Calc.java"),
    ]
    javac = read("javac/errors.txt", "javac -d out src/main/java/com/example/Calc.java", 1, JAVA)
    assert rows(javac) == [
        (None, None, "bad operand types for binary operator '-'", "src/main/java/com/example/Calc.java")
    ]


def test_maven_that_could_not_start_gives_its_last_error() -> None:
    outcome = read("maven/plugin_unresolved.txt", "mvn -o test", 1, JAVA)
    assert (outcome.failures, outcome.tests_failed) == ([], None)
    assert outcome.last_error is not None
    assert outcome.last_error.startswith("[ERROR] Failed to execute goal org.apache.maven.plugins")


def test_gradle() -> None:
    outcome = read("gradle/test_failures.txt", "./gradlew test", 1, JAVA)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("gradle", 1, 3)
    assert rows(outcome) == [
        ("CalcTest.adds()", "AssertionFailedError", "", "CalcTest.java"),
        ("CalcTest.divides()", "ArithmeticException", "", "CalcTest.java"),
        ("CalcTest.names()", "NullPointerException", "", "CalcTest.java"),
    ]
    compile_error = read("gradle/compile_error.txt", "gradle build", 1, JAVA)
    assert rows(compile_error) == [
        (None, None, "bad operand types for binary operator '-'", "src/main/java/com/example/Calc.java")
    ]


def test_a_javac_error_is_the_same_through_maven_gradle_or_alone() -> None:
    signatures = {
        read(name, command, 1, JAVA).failures[0].signature
        for name, command in [
            ("maven/compile_error.txt", "mvn compile"),
            ("gradle/compile_error.txt", "gradle build"),
            ("javac/errors.txt", "javac Calc.java"),
        ]
    }
    assert len(signatures) == 1
