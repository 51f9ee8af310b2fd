"""cargo test, nextest, rustc, clippy, go test, go build/vet and golangci-lint outputs."""

from __future__ import annotations

from tests.unit.runs_fixtures import GO, RUST, read, rows

PANICS = {
    "tests::adds": ("panic", "assertion `left == right` failed left: <n> right: <n>"),
    "tests::checks": ("panic", "negative input: -<n>"),
    "tests::parses": (
        "panic",
        "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
    ),
    "tests::truthy": ("panic", "add is off by one"),
}


def test_cargo_test_with_a_backtrace() -> None:
    outcome = read("cargo/test_failures.txt", "cargo test", 101, RUST)
    assert (outcome.kind, outcome.runner, outcome.tests_passed, outcome.tests_failed) == (
        "test",
        "cargo",
        1,
        4,
    )
    assert {f.test_id: (f.error_type, f.message) for f in outcome.failures} == PANICS
    # The backtrace names the innermost function of the crate itself.
    assert {f.test_id: f.frame for f in outcome.failures} == {
        "tests::checks": "src/lib.rs:checked",
        "tests::adds": "src/lib.rs:adds",
        "tests::truthy": "src/lib.rs:truthy",
        "tests::parses": "src/lib.rs:parse_port",
    }


def test_cargo_test_without_a_backtrace_has_the_same_signatures() -> None:
    with_trace = {
        f.test_id: f.signature for f in read("cargo/test_failures.txt", "cargo test", 101, RUST).failures
    }
    outcome = read("cargo/test_no_fail_fast.txt", "cargo test --no-fail-fast", 101, RUST)
    assert (outcome.tests_passed, outcome.tests_failed) == (2, 4)  # two test binaries, summed
    assert {f.test_id: f.frame for f in outcome.failures} == dict.fromkeys(PANICS, "src/lib.rs")
    assert {f.test_id: f.signature for f in outcome.failures} == with_trace


def test_nextest_reads_like_cargo_test() -> None:
    cargo = {
        f.test_id: f.signature for f in read("cargo/test_failures.txt", "cargo test", 101, RUST).failures
    }
    outcome = read("nextest/failures.txt", "cargo nextest run", 100, RUST)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("nextest", 4, 2)
    assert [(f.test_id, f.message) for f in outcome.failures] == [
        ("tests::adds", PANICS["tests::adds"][1]),
        ("tests::checks", PANICS["tests::checks"][1]),
    ]
    assert all(cargo[f.test_id or ""] == f.signature for f in outcome.failures)


def test_cargo_passing() -> None:
    outcome = read("cargo/test_passed.txt", "cargo test", 0, RUST)
    assert (outcome.passed, outcome.tests_passed, outcome.tests_failed, outcome.failures) == (True, 6, 0, [])


def test_rustc_errors_through_cargo_and_alone() -> None:
    build = read("cargo/build_errors.txt", "cargo build", 101, RUST)
    assert (build.kind, build.runner, build.tests_failed) == ("build", "cargo", None)
    assert rows(build) == [
        (None, "E0277", "cannot add `&str` to `i32`", "src/lib.rs"),
        (None, "E0308", "mismatched types", "src/lib.rs"),
        (None, "E0425", "cannot find function `missing_fn` in this scope", "src/lib.rs"),
    ]
    alone = read("rustc/error.txt", "rustc main.rs", 1, "/home/dev/wt1/rsmain")
    assert rows(alone) == [(None, "E0308", "mismatched types", "main.rs")]


def test_clippy_names_the_lint() -> None:
    outcome = read("cargo/clippy.txt", "cargo clippy -- -D warnings", 101, RUST)
    assert (outcome.kind, outcome.runner) == ("lint", "cargo")
    assert rows(outcome) == [
        (None, "unused_variables", "unused variable: `unused`", "src/lib.rs"),
        (None, "clippy::needless_return", "unneeded `return` statement", "src/lib.rs"),
        (
            None,
            "clippy::ptr_arg",
            "writing `&Vec` instead of `&[_]` involves a new object where a slice will do",
            "src/lib.rs",
        ),
    ]


def test_go_test_with_a_panic() -> None:
    outcome = read("go/test_failures.txt", "go test ./...", 1, GO)
    assert (outcome.runner, outcome.tests_passed, outcome.tests_failed) == ("go", None, 2)
    assert rows(outcome) == [
        ("TestAdd", None, "Add(<n>, <n>) = <n>, want <n>", "calc_test.go"),
        ("TestDiv", "panic", "runtime error: integer divide by zero", "calc/calc.go:Div"),
    ]


def test_go_subtests_plain_and_verbose() -> None:
    expected = [
        ("TestAdd", None, "Add(<n>, <n>) = <n>, want <n>", "calc_test.go"),
        ("TestTable/zero", None, "Add(<n>, <n>) = <n>, want <n>", "calc_test.go"),
        ("TestTable/one", None, "Add(<n>, <n>) = <n>, want <n>", "calc_test.go"),
    ]
    plain = read("go/test_subtests.txt", "go test ./...", 1, GO)
    assert (plain.tests_passed, plain.tests_failed) == (
        None,
        3,
    )  # a parent failing with its subtests is not counted
    assert rows(plain) == expected
    verbose = read("go/test_verbose.txt", "go test -v ./...", 1, GO)
    assert (verbose.tests_passed, verbose.tests_failed) == (1, 3)
    assert rows(verbose) == expected
    assert [f.signature for f in verbose.failures] == [f.signature for f in plain.failures]
    passing = read("go/test_passed.txt", "go test ./util/", 0, GO)
    assert (passing.passed, passing.failures) == (True, [])


BUILD = [
    (None, None, 'imported and not used: "os"', "calc/calc.go"),
    (
        None,
        None,
        'invalid operation: a + b + "<n>" (mismatched types int and untyped string)',
        "calc/calc.go",
    ),
    (None, None, "undefined: undefinedThing", "calc/calc.go"),
]


def test_go_build_vet_and_a_test_that_did_not_build() -> None:
    build = read("go/build_errors.txt", "go build ./...", 2, GO)
    assert (build.kind, rows(build)) == ("build", BUILD)
    tests = read("go/test_build_failed.txt", "go test ./...", 2, GO)
    assert (tests.kind, rows(tests)) == ("test", BUILD)
    vet = read("go/vet.txt", "go vet ./...", 2, GO)
    assert rows(vet) == [
        (None, None, 'fmt.Sprintf format %d has arg m["name"] of wrong type string', "calc/calc.go")
    ]


def test_golangci_lint() -> None:
    outcome = read("golangci-lint/issues.txt", "golangci-lint run", 1, GO)
    assert (outcome.kind, outcome.runner) == ("lint", "golangci-lint")
    assert rows(outcome) == [
        (None, "typecheck", '"os" imported and not used', "calc/calc.go"),
        (None, "errcheck", "Error return value of `f.Close` is not checked", "calc/calc.go"),
        (None, "unused", "func `unused` is unused", "calc/calc.go"),
    ]
