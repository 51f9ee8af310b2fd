"""``learning-memory export`` and ``import`` as a person runs them: the installed command, a store
filled through the MCP tools, exported through a real worker (arq mode, started by the commands),
imported into another data folder in inline mode, and the same answers from both; importing
twice changes nothing; a cut-short file is refused naming its line, and nothing is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.redis]
COMMAND = str(Path(sys.executable).with_name("learning-memory"))
FACTS = [
    ("The staging database is refreshed from production every Sunday night.", "fact"),
    ("Prefer small pull requests with one concern each.", "preference"),
    ("Gateway answers with code QX7741 when the card issuer times out; retry once.", "fact"),
]
TIMEOUT_S = 240


def cli(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [COMMAND, *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert (done.returncode == 0) == ok, done.stderr[-3000:]
    return done


def call(env: dict[str, str], tool: str, **arguments: Any) -> Any:
    return json.loads(cli(env, "call", tool, json.dumps(arguments)).stdout)


def test_export_through_a_worker_and_import_elsewhere(lms_env: dict[str, str], tmp_path: Path) -> None:
    env = {**lms_env, "LMS_EMBEDDING_MODEL": "hashing:384", "LMS_LOG_LEVEL": "WARNING"}
    for content, category in FACTS:
        call(env, "store_memory", content=content, category=category)
    query = {"query": "what does QX7741 mean", "limit": 3}
    before = call(env, "retrieve_memories", **query)
    file = tmp_path / "export.jsonl"
    exported = json.loads(cli(env, "export", str(file)).stdout)
    assert exported["counts"]["memory"] == len(FACTS) and file.exists()

    elsewhere = {
        **env,
        "LMS_QUEUE": "inline",
        "LMS_DATA_DIR": str(tmp_path / "other-data"),
        "LMS_JOURNAL_DIR": str(tmp_path / "other-journal"),
    }
    report = json.loads(cli(elsewhere, "import", str(file)).stdout)
    assert report["memories"] == {"imported": len(FACTS), "present": 0} and report["re_embedded"] == len(
        FACTS
    )
    assert call(elsewhere, "retrieve_memories", **query) == before
    again = json.loads(cli(elsewhere, "import", str(file)).stdout)
    assert again["memories"] == {"imported": 0, "present": len(FACTS)}
    assert call(elsewhere, "list_memories", limit=10)["total"] == len(FACTS)

    lines = file.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join([*lines[:-1], lines[-1][:30]]))
    fresh = {**elsewhere, "LMS_DATA_DIR": str(tmp_path / "fresh-data")}
    refused = cli(fresh, "import", str(cut), ok=False)
    assert f"line {len(lines)}" in refused.stderr and "cut short" in refused.stderr
    assert call(fresh, "list_memories", limit=10)["total"] == 0

    markdown = tmp_path / "VALUES.md"
    assert json.loads(cli(env, "export", "--values-md", str(markdown)).stdout)["values"] == 0
    assert markdown.read_text().startswith("# Values learned")
    assert "give a FILE" in cli(env, "export", ok=False).stderr
