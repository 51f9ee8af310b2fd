"""The words that name test runners, builds and linters, and the words that only stand before them."""

from __future__ import annotations

from typing import NamedTuple

from learning_memory.shared.contracts.capture import RunKind


class Run(NamedTuple):
    kind: RunKind
    runner: str | None


# Options whose value is the next word (``uv run --with x pytest``, ``pnpm --filter app test``).
VALUE_OPTIONS = frozenset(
    "--with --python -p --extra --group --package --project --directory --env-file -n --name -s --signal"
    " -k -u -C --cwd --dir --filter -F --workspace -w --prefix --environment -e".split()
)
# Words standing before a command without changing which command runs (their options skipped).
PREFIXES = frozenset(
    "time sudo env nice command exec xvfb-run timeout nohup stdbuf caffeinate dotenv chronic unbuffer"
    " ionice".split()
)
WRAPPER_PAIRS = frozenset(
    tuple(pair.split())
    for pair in (
        "uv run|poetry run|pipenv run|hatch run|pdm run|rye run|pixi run|conda run|bundle exec|pnpm exec"
        "|pnpm dlx|yarn dlx|yarn exec|npm exec|coverage run|mise exec"
    ).split("|")
)
LAUNCHERS = frozenset({"npx", "bunx", "pnpx"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


def _same(kind: RunKind, runner: str, words: str) -> dict[str, Run]:
    return {word: Run(kind, runner) for word in words.split()}


# Commands that are the runner themselves.
DIRECT: dict[str, Run] = {
    **_same("test", "pytest", "pytest py.test"),
    **_same("test", "unittest", "unittest"),
    **_same("test", "tox", "tox"),
    **_same("test", "nox", "nox"),
    **_same("test", "jest", "jest"),
    **_same("test", "vitest", "vitest"),
    **_same("test", "mocha", "mocha"),
    **_same("test", "rspec", "rspec"),
    **_same("test", "minitest", "testrb"),
    **_same("test", "phpunit", "phpunit"),
    **_same("test", "ctest", "ctest"),
    **_same("test", "go", "gotestsum"),
    **_same("build", "tsc", "tsc vue-tsc"),
    **_same("build", "mypy", "mypy dmypy"),
    **_same("build", "pyright", "pyright"),
    **_same("build", "rustc", "rustc"),
    **_same("build", "javac", "javac"),
    **_same("build", "dotnet", "msbuild"),
    **_same("build", "swift", "swiftc"),
    **_same("build", "gcc", "gcc g++ cc c++ clang clang++"),
    **_same("build", "ninja", "ninja"),
    **_same("lint", "ruff", "ruff"),
    **_same("lint", "flake8", "flake8 pycodestyle pyflakes"),
    **_same("lint", "pylint", "pylint"),
    **_same("lint", "eslint", "eslint"),
    **_same("lint", "golangci-lint", "golangci-lint staticcheck"),
    **_same("lint", "rubocop", "rubocop standardrb"),
    # Linters read only by the parsers of the sweep (their own formats are not parsed).
    **{
        name: Run("lint", name)
        for name in (
            "black isort biome oxlint stylelint prettier shellcheck hadolint yamllint swiftlint ktlint"
            " phpstan psalm phpcs markdownlint actionlint"
        ).split()
    },
}


def _words(runner: str, test: str = "", build: str = "", lint: str = "") -> dict[str, Run]:
    """{subcommand: Run} for one tool: ``_words("go", test="test", build="build vet")``."""
    return {**_same("test", runner, test), **_same("build", runner, build), **_same("lint", runner, lint)}


# Tools whose first plain word picks what they do.
SUBCOMMANDS: dict[str, dict[str, Run]] = {
    "go": _words("go", test="test", build="build vet install"),
    "cargo": {
        **_words("cargo", test="test t", build="build b check c rustc", lint="clippy"),
        "nextest": Run("test", "nextest"),
    },
    "mvn": _words("maven", test="test verify", build="compile test-compile package install"),
    "gradle": _words(
        "gradle",
        test="test check",
        build="build assemble compileJava compileKotlin classes",
    ),
    "dotnet": _words("dotnet", test="test", build="build msbuild"),
    "swift": _words("swift", test="test", build="build"),
    "mix": {
        **_words("exunit", test="test"),
        **_words("elixir", build="compile"),
        "credo": Run("lint", "credo"),
        "format": Run("lint", "mix-format"),
    },
    "rails": {**_words("minitest", test="test"), **_words("rspec", test="spec")},
    "rake": {**_words("minitest", test="test"), **_words("rspec", test="spec")},
    "deno": _words("deno", test="test", lint="lint", build="check"),
    "hatch": _words("pytest", test="test"),
    "bazel": _words("bazel", test="test", build="build"),
    "meson": _words("meson", test="test", build="compile"),
    "next": {**_words("next", build="build"), **_words("eslint", lint="lint")},
    "vite": _words("vite", build="build"),
    "composer": _words("composer", test="test"),
}
for _alias, _tool in (("mvnw", "mvn"), ("gradlew", "gradle")):
    SUBCOMMANDS[_alias] = SUBCOMMANDS[_tool]
