"""Which Bash commands are test or build runs, and what their output says."""

from __future__ import annotations

import pytest

from learning_memory.server.hooks.run_outcomes import Counts, classify, counts, exit_code, summary


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("pytest -q", "test"),
        ("cd app && .venv/bin/python -m pytest tests/ -x", "test"),
        ("FOO=1 uv run pytest", "test"),
        ("python3 -m unittest discover", "test"),
        ("go test ./...", "test"),
        ("cargo test --all", "test"),
        ("npm test", "test"),
        ("pnpm run test:unit", "test"),
        ("yarn test", "test"),
        ("npx jest src", "test"),
        ("npx vitest run", "test"),
        ("make test", "test"),
        ("bundle exec rspec", None),  # bundle's own subcommand: not recognised, nothing claimed
        ("time ./gradlew test", "test"),
        ("make && make check", "test"),
        ("make", "build"),
        ("cargo build --release", "build"),
        ("npm run build", "build"),
        ("tsc -p .", "build"),
        ("pip install pytest", None),
        ("cat pytest.ini", None),
        ("grep -rn pytest .", None),
        ("git commit -m 'make test pass'", None),
        ("echo 'unbalanced", None),
        ("", None),
    ],
)
def test_classify(command: str, kind: str | None) -> None:
    assert classify(command) == kind


@pytest.mark.parametrize(
    ("output", "found"),
    [
        ("==== 5 passed, 1 failed, 2 skipped in 0.2s ====", Counts(5, 1)),
        ("==== 3 passed in 0.1s ====", Counts(3, 0)),
        ("==== 1 error in 0.1s ====", Counts(0, 1)),
        ("Tests:       1 failed, 4 passed, 5 total", Counts(4, 1)),
        (" Tests  1 failed | 3 passed (4)", Counts(3, 1)),
        ("  12 passing (40ms)\n  2 failing", Counts(12, 2)),
        ("5 examples, 1 failure", Counts(4, 1)),
        (
            "test result: ok. 5 passed; 0 failed; 0 ignored\ntest result: FAILED. 2 passed; 1 failed;",
            Counts(7, 1),
        ),
        ("Ran 5 tests in 0.1s\n\nFAILED (failures=1, errors=1)", Counts(3, 2)),
        ("Ran 2 tests in 0.0s\n\nOK", Counts(2, 0)),
        ("--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\nFAIL\tpkg\t0.01s", Counts(1, 1)),
        ("compiling...\ndone", Counts()),
    ],
)
def test_counts(output: str, found: Counts) -> None:
    assert counts(output) == found


def test_exit_code_and_summary() -> None:
    assert exit_code("Exit code 3\nbad") == 3 and exit_code("no code") is None
    assert summary("test", Counts(4, 1), 1) == "tests: 4 passed, 1 failed (exit 1)"
    assert summary("build", Counts(), 0) == "build: succeeded"
    assert summary("build", Counts(), 2) == "build: failed (exit 2)"
