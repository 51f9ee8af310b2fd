"""Which commands are test, build or lint runs, and which runner: only the command's own words count."""

from __future__ import annotations

import pytest

from learning_memory.shared.runs import classify


@pytest.mark.parametrize(
    ("command", "kind", "runner"),
    [
        # Python
        ("pytest -q", "test", "pytest"),
        ("cd app && .venv/bin/python -m pytest tests/ -x", "test", "pytest"),
        ("FOO=1 uv run pytest", "test", "pytest"),
        ("uv run --with pytest-cov pytest --cov", "test", "pytest"),
        ("poetry run python -m pytest", "test", "pytest"),
        ("timeout 600 pytest 2>&1 | tail -40", "test", "pytest"),
        ("pytest>out.txt 2>/dev/null", "test", "pytest"),
        ("hatch test", "test", "pytest"),
        ("python3 -m unittest discover", "test", "unittest"),
        ("python manage.py test polls", "test", "unittest"),
        ("tox -e py311", "test", "tox"),
        ("python test_parser.py", "test", None),
        ("mypy --strict src", "build", "mypy"),
        ("python -m mypy src", "build", "mypy"),
        ("ruff check . && ruff format --check .", "lint", "ruff"),
        ("flake8 src", "lint", "flake8"),
        ("pylint src/app", "lint", "pylint"),
        ("black --check .", "lint", "black"),
        # JavaScript
        ("npx jest src", "test", "jest"),
        ("npx vitest run", "test", "vitest"),
        ("yarn jest --ci", "test", "jest"),
        ("npx mocha 'test/**/*.spec.js'", "test", "mocha"),
        ("node --test", "test", "node"),
        ("npm test", "test", "npm"),
        ("npm t", "test", "npm"),
        ("pnpm run test:unit", "test", "pnpm"),
        ("pnpm --filter web test", "test", "pnpm"),
        ("yarn test", "test", "yarn"),
        ("bun test", "test", "bun"),
        ("npm run build", "build", "npm"),
        ("npm run typecheck", "build", "npm"),
        ("npx tsc --noEmit", "build", "tsc"),
        ("npm run lint", "lint", "npm"),
        ("npx eslint .", "lint", "eslint"),
        ("next lint", "lint", "eslint"),
        # Rust and Go
        ("cargo test --all", "test", "cargo"),
        ("cargo +nightly test", "test", "cargo"),
        ("cargo nextest run", "test", "nextest"),
        ('bash -c "cd x && cargo nextest run"', "test", "nextest"),
        ("cargo build --release", "build", "cargo"),
        ("cargo check", "build", "cargo"),
        ("cargo clippy -- -D warnings", "lint", "cargo"),
        ("rustc main.rs", "build", "rustc"),
        ("go test ./...", "test", "go"),
        ("go build ./... && go vet ./...", "build", "go"),
        ("golangci-lint run", "lint", "golangci-lint"),
        # Ruby, Elixir, PHP
        ("bundle exec rspec", "test", "rspec"),
        ("bin/rails test test/models", "test", "minitest"),
        ("rails test", "test", "minitest"),
        ("ruby -Itest test/models/user_test.rb", "test", "minitest"),
        ("bundle exec rake test", "test", "minitest"),
        ("rake spec", "test", "rspec"),
        ("bundle exec rubocop -a", "lint", "rubocop"),
        ("mix test", "test", "exunit"),
        ("mix compile", "build", "elixir"),
        ("vendor/bin/phpunit", "test", "phpunit"),
        ("php vendor/bin/phpunit --filter testAdd", "test", "phpunit"),
        ("php artisan test", "test", "phpunit"),
        # JVM, .NET, Swift, C
        ("mvn test", "test", "maven"),
        ("mvn -q clean install", "build", "maven"),
        ("./mvnw -pl core clean test", "test", "maven"),
        ("time ./gradlew test", "test", "gradle"),
        ("gradle clean build", "build", "gradle"),
        ("javac -d out Main.java", "build", "javac"),
        ("dotnet test", "test", "dotnet"),
        ("dotnet build", "build", "dotnet"),
        ("swift test", "test", "swift"),
        ("swift build", "build", "swift"),
        ("ctest --output-on-failure", "test", "ctest"),
        ("cmake --build build", "build", "cmake"),
        ("gcc -o calc calc.c", "build", "gcc"),
        # Wrappers and scripts
        ("make test", "test", "make"),
        ("make && make check", "test", "make"),
        ("make", "build", "make"),
        ("make lint typecheck", "build", "make"),
        ("nice -n 10 make check", "test", "make"),
        ("just test", "test", "just"),
        ("./test.sh", "test", None),
        ("bash run_tests.sh", "test", None),
        ("scripts/run-tests --fast", "test", None),
    ],
)
def test_runs(command: str, kind: str, runner: str | None) -> None:
    assert classify(command) == (kind, runner)


@pytest.mark.parametrize(
    "command",
    [
        "pip install pytest",
        "cat pytest.ini",
        "grep -rn pytest .",
        "git commit -m 'make test pass'",
        'echo "a && pytest"',
        "python -c 'import pytest'",
        "python script.py",
        "git log --grep=FAILED",
        "npm install",
        "npm run dev",
        "cargo add serde",
        "go mod tidy",
        "make clean",
        "test -f setup.cfg",
        "which pytest",
        "echo 'unbalanced",
        "",
    ],
)
def test_not_runs(command: str) -> None:
    assert classify(command) == ("other", None)


def test_a_test_wins_over_a_build_and_a_build_over_a_lint() -> None:
    assert classify("ruff check . && mypy . && pytest -q") == ("test", "pytest")
    assert classify("ruff check . ; mypy .") == ("build", "mypy")
