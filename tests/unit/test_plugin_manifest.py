"""The plugin's files agree with each other and with the server: one name throughout, hooks that
address the server as Claude Code names a plugin's server, launchers that exist, and every tool
the hooks and skills name is one the server lists. (``claude plugin validate`` checks the shapes;
the end-to-end tests run it.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from mcp import Client

from learning_memory.composition import build_server
from tests.mcp_thread import inline_settings

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugin"
NAME = "learning-memory"
TOOL_NAME = re.compile(r"mcp__plugin_learning-memory_learning-memory__(\w+)")


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _hooks() -> list[tuple[str, dict[str, Any]]]:
    config = _json(PLUGIN / "hooks" / "hooks.json")
    return [
        (event, hook)
        for event, groups in config["hooks"].items()
        for group in groups
        for hook in group["hooks"]
    ]


def _launcher(command: str) -> Path:
    path = command.split('"')[1] if command.startswith('"') else command.split()[0]
    return Path(path.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)))


def test_one_name_from_marketplace_to_server() -> None:
    market = _json(REPO / ".claude-plugin" / "marketplace.json")
    manifest = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    servers = _json(PLUGIN / ".mcp.json")["mcpServers"]
    assert market["name"] == NAME
    assert [(p["name"], p["source"]) for p in market["plugins"]] == [(NAME, "./plugin")]
    assert manifest["name"] == NAME and manifest["license"] == "MIT"
    assert manifest["version"] == market["plugins"][0]["version"]
    assert list(servers) == [NAME]
    assert servers[NAME]["args"] == ["serve"]
    assert os.access(_launcher(servers[NAME]["command"]), os.X_OK)


def test_hooks_address_the_plugin_server_and_existing_launchers() -> None:
    hooks = _hooks()
    assert {event for event, _ in hooks} >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}
    for event, hook in hooks:
        assert hook["timeout"] <= 5, (event, hook)
        if hook["type"] == "mcp_tool":
            assert hook["server"] == f"plugin:{NAME}:{NAME}", (event, hook)
        else:
            assert os.access(_launcher(hook["command"]), os.X_OK), (event, hook)


def test_skills_have_frontmatter_named_after_their_folder() -> None:
    skills = sorted(PLUGIN.glob("skills/*/SKILL.md"))
    assert {s.parent.name for s in skills} >= {"retro", "ghap"}
    for skill in skills:
        front = skill.read_text().split("---")[1]
        fields = dict(line.split(":", 1) for line in front.strip().splitlines())
        assert fields["name"].strip() == skill.parent.name
        assert len(fields["description"].strip()) > 40


async def test_every_tool_the_plugin_names_exists(tmp_path: Path) -> None:
    named = {hook["tool"] for _, hook in _hooks() if hook["type"] == "mcp_tool"}
    for skill in PLUGIN.glob("skills/*/SKILL.md"):
        named |= set(TOOL_NAME.findall(skill.read_text()))
    assert {"get_clusters", "store_value", "start_ghap", "get_premortem_warnings"} <= named
    async with Client(build_server(inline_settings(tmp_path))) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
    assert named - listed == set()
