"""``learning-memory claude install | uninstall``: the Claude Code plugin of this checkout, in one step.

install records which ``learning-memory`` runs (the plugin's launcher reads it when it is not run
from this checkout), checks the plugin with ``claude plugin validate``, adds the checkout as a
marketplace and installs the plugin from it. uninstall undoes all three. Both can run again at
any time: what is already done is skipped, so a second run only reports.

Everything goes through the ``claude`` CLI, never by editing Claude Code's files: their layout is
Claude Code's own business and changes between releases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

MARKETPLACE = "learning-memory"
PLUGIN = "learning-memory"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
SCOPES = ("user", "project", "local")
# Where `make test` installs the pinned Claude Code, relative to the checkout.
LOCAL_CLAUDE = Path(".tools/claude/node_modules/.bin/claude")
CLAUDE_TIMEOUT_S = 120


def _marketplace_root() -> Path:
    """The marketplace this module ships with: the checkout an editable install runs in place,
    or the installed package, which carries the marketplace and its plugin as data (in a
    checkout, the package holds links to the repository's own)."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent
    return checkout if (checkout / ".claude-plugin" / "marketplace.json").is_file() else package


MARKETPLACE_ROOT = _marketplace_root()

INSTALL_HINT = (
    "Claude Code's `claude` command was not found on PATH. Install it "
    "(npm install -g @anthropic-ai/claude-code, see https://docs.claude.com/en/docs/claude-code), "
    "or run `make test` in this checkout, which installs a pinned copy into .tools/claude."
)


class ClaudeCliError(Exception):
    """A step failed; the message says which and what ``claude`` answered."""


def find_claude(env: Mapping[str, str] | None = None, repo: Path | None = None) -> Path | None:
    """``claude`` on PATH first (the user's own install), else the checkout's pinned copy."""
    env = os.environ if env is None else env
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if found:
        return Path(found)
    local = (MARKETPLACE_ROOT if repo is None else repo) / LOCAL_CLAUDE
    return local if os.access(local, os.X_OK) else None


def command_file(env: Mapping[str, str] | None = None) -> Path:
    """Where the path of the ``learning-memory`` to run is recorded (the launcher reads it)."""
    env = os.environ if env is None else env
    config = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(config) / "learning-memory" / "command"


def running_command(argv0: str | None = None) -> Path | None:
    """The ``learning-memory`` executable running now: the entry point if that is how it started
    (``python -m learning_memory`` is not), else the one next to this Python (its venv), else PATH."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    started = Path(argv0)
    if started.name == "learning-memory" and os.access(started, os.X_OK):
        return started.absolute()
    beside = Path(sys.executable).parent / "learning-memory"
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("learning-memory")
    return Path(found) if found else None


class ClaudeCode:
    """Runs ``claude`` subcommands with one environment, failing with what it said."""

    def __init__(self, claude: Path, env: Mapping[str, str] | None = None) -> None:
        self.claude = claude
        self.env = dict(os.environ if env is None else env)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(
                [str(self.claude), *args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLAUDE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClaudeCliError(f"`claude {' '.join(args)}` could not run: {exc}") from exc
        if check and done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip())[-2000:]
            raise ClaudeCliError(f"`claude {' '.join(args)}` failed (exit {done.returncode}): {said}")
        return done

    def json(self, *args: str) -> Any:
        out = self.run(*args, "--json").stdout
        try:
            return json.loads(out)
        except ValueError as exc:
            raise ClaudeCliError(
                f"`claude {' '.join(args)} --json` did not answer JSON: {out[:500]}"
            ) from exc

    def marketplace_path(self) -> str | None:
        for market in self.json("plugin", "marketplace", "list"):
            if market.get("name") == MARKETPLACE:
                return str(market.get("path") or market.get("installLocation") or "")
        return None

    def installed_scopes(self) -> list[str]:
        return [p.get("scope", "user") for p in self.json("plugin", "list") if p.get("id") == PLUGIN_ID]


def install(claude: ClaudeCode, repo: Path, scope: str, command: Path | None, out: TextIO) -> None:
    if not (repo / ".claude-plugin" / "marketplace.json").is_file():
        raise ClaudeCliError(
            f"no plugin marketplace in {repo}: the plugin ships with the source checkout; "
            "run this command from a clone's installed learning-memory"
        )
    if command is not None:
        recorded = command_file(claude.env)
        recorded.parent.mkdir(parents=True, exist_ok=True)
        recorded.write_text(f"{command}\n")
        print(f"recorded {command} in {recorded}", file=out)
    claude.run("plugin", "validate", str(repo))
    print(f"validated the plugin in {repo}", file=out)
    present = claude.marketplace_path()
    if present is not None and Path(present).resolve() != repo.resolve():
        # Another clone holds the name: the newest install wins, as a reinstall would.
        claude.run("plugin", "marketplace", "remove", MARKETPLACE)
        print(f"removed marketplace {MARKETPLACE} (it pointed at {present})", file=out)
        present = None
    if present is None:
        claude.run("plugin", "marketplace", "add", str(repo))
        print(f"added marketplace {MARKETPLACE} ({repo})", file=out)
    else:
        print(f"marketplace {MARKETPLACE} already added ({repo})", file=out)
    if scope in claude.installed_scopes():
        print(f"plugin {PLUGIN_ID} already installed (scope {scope})", file=out)
    else:
        claude.run("plugin", "install", PLUGIN_ID, "--scope", scope)
        print(f"installed plugin {PLUGIN_ID} (scope {scope})", file=out)
    print(
        "Check it with `claude plugin list` (learning-memory@learning-memory, enabled) and, in a "
        "session, `/mcp` (plugin:learning-memory:learning-memory connected). New sessions load it.",
        file=out,
    )


def uninstall(claude: ClaudeCode, out: TextIO) -> None:
    scopes = claude.installed_scopes()
    for scope in scopes:
        claude.run("plugin", "uninstall", PLUGIN_ID, "--scope", scope)
        print(f"uninstalled plugin {PLUGIN_ID} (scope {scope})", file=out)
    if not scopes:
        print(f"plugin {PLUGIN_ID} was not installed", file=out)
    if claude.marketplace_path() is not None:
        claude.run("plugin", "marketplace", "remove", MARKETPLACE)
        print(f"removed marketplace {MARKETPLACE}", file=out)
    else:
        print(f"marketplace {MARKETPLACE} was not added", file=out)
    recorded = command_file(claude.env)
    if recorded.exists():
        recorded.unlink()
        print(f"removed {recorded}", file=out)


def run(action: str, scope: str = "user") -> int:
    """The CLI entry: 0 on success, 1 with a message on stderr otherwise."""
    claude = find_claude()
    if claude is None:
        print(f"learning-memory claude {action}: {INSTALL_HINT}", file=sys.stderr)
        return 1
    code = ClaudeCode(claude)
    try:
        if action == "install":
            install(code, MARKETPLACE_ROOT, scope, running_command(), sys.stdout)
        else:
            uninstall(code, sys.stdout)
    except ClaudeCliError as exc:
        print(f"learning-memory claude {action}: {exc}", file=sys.stderr)
        return 1
    return 0
