"""``learning-memory claude install | uninstall`` against a fake ``claude`` that logs its argv and
keeps the marketplace/plugin state a real one would, so repeated runs can be checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from learning_memory.cli import claude as claude_cli
from learning_memory.cli.main import main

FAKE_CLAUDE = """#!{python}
import json, os, sys
state_path, log_path = os.environ["FAKE_CLAUDE_STATE"], os.environ["FAKE_CLAUDE_LOG"]
state = json.load(open(state_path)) if os.path.exists(state_path) else {{"markets": [], "plugins": []}}
args = sys.argv[1:]
with open(log_path, "a") as log:
    log.write(json.dumps(args) + "\\n")
fail = os.environ.get("FAKE_CLAUDE_FAIL")
if fail and " ".join(args).startswith(fail):
    print("something is wrong with the manifest", file=sys.stderr)
    sys.exit(1)
if args[:3] == ["plugin", "marketplace", "list"]:
    print(json.dumps(state["markets"]))
elif args[:3] == ["plugin", "marketplace", "add"]:
    state["markets"].append({{"name": "learning-memory", "path": args[3]}})
elif args[:3] == ["plugin", "marketplace", "remove"]:
    state["markets"] = [m for m in state["markets"] if m["name"] != args[3]]
elif args[:2] == ["plugin", "list"]:
    print(json.dumps(state["plugins"]))
elif args[:2] == ["plugin", "install"]:
    state["plugins"].append({{"id": args[2], "scope": args[args.index("--scope") + 1], "enabled": True}})
elif args[:2] == ["plugin", "uninstall"]:
    scope = args[args.index("--scope") + 1]
    state["plugins"] = [p for p in state["plugins"] if not (p["id"] == args[2] and p["scope"] == scope)]
json.dump(state, open(state_path, "w"))
"""


class FakeClaude:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = folder / "argv.jsonl"
        self.state = folder / "state.json"
        self.path = folder / "claude"
        self.path.write_text(FAKE_CLAUDE.format(python=sys.executable))
        self.path.chmod(0o755)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def changes(self) -> list[list[str]]:
        """The calls that change something (listings left out)."""
        return [c for c in self.calls() if c[-1] != "--json"]

    def reset_log(self) -> None:
        self.log.unlink(missing_ok=True)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = FakeClaude(bin_dir)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_CLAUDE_STATE", str(fake.state))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(fake.log))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return fake


REPO = str(claude_cli.MARKETPLACE_ROOT)


def test_install_records_validates_adds_and_installs(
    fake: FakeClaude, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claude", "install"]) == 0
    assert fake.changes() == [
        ["plugin", "validate", REPO],
        ["plugin", "marketplace", "add", REPO],
        ["plugin", "install", "learning-memory@learning-memory", "--scope", "user"],
    ]
    recorded = (tmp_path / "config" / "learning-memory" / "command").read_text().strip()
    assert Path(recorded).name == "learning-memory"
    assert Path(recorded).is_absolute()
    out = capsys.readouterr().out
    assert "installed plugin learning-memory@learning-memory (scope user)" in out
    assert "claude plugin list" in out


def test_install_twice_changes_nothing_the_second_time(
    fake: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claude", "install"]) == 0
    fake.reset_log()
    assert main(["claude", "install"]) == 0
    assert fake.changes() == [["plugin", "validate", REPO]]
    out = capsys.readouterr().out
    assert "marketplace learning-memory already added" in out
    assert "already installed (scope user)" in out


def test_install_with_a_scope(fake: FakeClaude) -> None:
    assert main(["claude", "install", "--scope", "project"]) == 0
    assert ["plugin", "install", "learning-memory@learning-memory", "--scope", "project"] in fake.changes()


def test_install_replaces_a_marketplace_of_another_clone(fake: FakeClaude) -> None:
    fake.state.write_text(
        json.dumps({"markets": [{"name": "learning-memory", "path": "/elsewhere"}], "plugins": []})
    )
    assert main(["claude", "install"]) == 0
    assert fake.changes()[1:3] == [
        ["plugin", "marketplace", "remove", "learning-memory"],
        ["plugin", "marketplace", "add", REPO],
    ]


def test_uninstall_undoes_everything_and_twice_is_fine(
    fake: FakeClaude, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claude", "install"]) == 0
    fake.reset_log()
    assert main(["claude", "uninstall"]) == 0
    assert fake.changes() == [
        ["plugin", "uninstall", "learning-memory@learning-memory", "--scope", "user"],
        ["plugin", "marketplace", "remove", "learning-memory"],
    ]
    assert not (tmp_path / "config" / "learning-memory" / "command").exists()
    fake.reset_log()
    assert main(["claude", "uninstall"]) == 0
    assert fake.changes() == []
    out = capsys.readouterr().out
    assert "was not installed" in out
    assert "was not added" in out


def test_a_failing_claude_step_is_reported_with_what_it_said(
    fake: FakeClaude, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_FAIL", "plugin validate")
    assert main(["claude", "install"]) == 1
    err = capsys.readouterr().err
    assert "`claude plugin validate" in err
    assert "something is wrong with the manifest" in err
    assert all(call[:3] != ["plugin", "marketplace", "add"] for call in fake.calls())


def test_no_claude_anywhere_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(claude_cli, "MARKETPLACE_ROOT", tmp_path)  # no pinned copy there either
    assert main(["claude", "install"]) == 1
    err = capsys.readouterr().err
    assert "`claude` command was not found" in err
    assert "npm install -g @anthropic-ai/claude-code" in err


def test_the_pinned_copy_is_used_when_none_is_on_path(tmp_path: Path) -> None:
    pinned = tmp_path / claude_cli.LOCAL_CLAUDE
    pinned.parent.mkdir(parents=True)
    pinned.write_text("#!/bin/sh\n")
    pinned.chmod(0o755)
    assert claude_cli.find_claude({"PATH": ""}, tmp_path) == pinned


def test_no_marketplace_outside_a_checkout(fake: FakeClaude, tmp_path: Path) -> None:
    code = claude_cli.ClaudeCode(fake.path)
    with pytest.raises(claude_cli.ClaudeCliError, match="ships with the source checkout"):
        claude_cli.install(code, tmp_path, "user", None, sys.stdout)


def test_running_command_prefers_the_entry_point(tmp_path: Path) -> None:
    entry = tmp_path / "learning-memory"
    entry.write_text("#!/bin/sh\n")
    entry.chmod(0o755)
    assert claude_cli.running_command(str(entry)) == entry
    # Started as `python -m learning_memory`: the entry point next to this interpreter (the venv's).
    beside = claude_cli.running_command("/somewhere/learning_memory/cli/__main__.py")
    assert beside == Path(sys.executable).parent / "learning-memory"


def test_command_file_follows_xdg_config_home() -> None:
    assert claude_cli.command_file({"XDG_CONFIG_HOME": "/x"}) == Path("/x/learning-memory/command")
    assert claude_cli.command_file({"HOME": "/h"}) == Path("/h/.config/learning-memory/command")
