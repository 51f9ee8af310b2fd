"""The code tools through an MCP client, in-process (inline mode, hashing embedder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from learning_memory.shared.contracts.code import LANGUAGES
from tests.mcp_thread import ThreadedClient, error, inline_client, ok

RETRY = '''
def calculate_retry_delay(attempt: int, base: float = 0.5) -> float:
    """How long to wait before retrying a request that got HTTP 429."""
    if attempt <= 0:
        return 0.0
    return min(30.0, base * 2 ** attempt)
'''
PARSER = '''
class ConfigParser:
    """Reads settings from an INI file."""

    def load(self, path):
        """Open the file and parse each section."""
        with open(path) as handle:
            return handle.read().split("[")
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "retry.py").write_text(RETRY)
    (root / "pkg" / "config.py").write_text(PARSER)
    return root


@pytest.fixture
def mcp(tmp_path: Path, project: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path, "hashing:256", repo_path=project) as client:
        yield client


def test_index_search_similar_list_delete(mcp: ThreadedClient, project: Path) -> None:
    stats = ok(mcp, "index_codebase", directory=str(project), project="demo")
    assert stats["project"] == "demo" and stats["files_indexed"] == 2 and stats["units_indexed"] >= 3
    assert stats["errors"] == []

    found = ok(mcp, "search_code", query="calculate retry delay", project="demo")
    top = found["results"][0]
    assert top["qualified_name"] == "calculate_retry_delay" and top["file_path"] == "pkg/retry.py"
    assert top["language"] == "python" and top["unit_type"] == "function" and top["has_docstring"] is True
    assert top["start_line"] == 2 and top["complexity"] == 2 and 0 <= top["score"] <= 1
    assert ok(mcp, "search_code", query="retry", language="rust")["count"] == 0
    assert ok(mcp, "search_code", query="retry", project="other")["count"] == 0

    similar = ok(mcp, "find_similar_code", snippet="def load(self, path):\n    return open(path).read()")
    assert similar["results"][0]["qualified_name"] == "ConfigParser.load"

    again = ok(mcp, "index_codebase", directory=str(project), project="demo")
    assert again["files_indexed"] == 0 and again["files_unchanged"] == 2

    projects = ok(mcp, "list_indexed_projects")
    assert projects["count"] == 1 and projects["projects"][0]["project"] == "demo"
    deleted = ok(mcp, "delete_project_index", project="demo")
    assert deleted["units_deleted"] == projects["projects"][0]["units"]
    assert ok(mcp, "search_code", query="retry")["count"] == 0


def test_relative_directory_is_under_the_repository(mcp: ThreadedClient) -> None:
    assert ok(mcp, "index_codebase", directory="pkg", project="rel")["files_indexed"] == 2


@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_bad_directories_are_validation_errors(mcp: ThreadedClient, project: Path, where: str) -> None:
    target = project / "pkg" / "retry.py" if where == "a-file" else project / "nowhere"
    failure = error(mcp, "index_codebase", directory=str(target), project="x")
    assert failure["type"] == "validation_error" and str(target) in failure["message"]


def test_search_inputs(mcp: ThreadedClient) -> None:
    assert ok(mcp, "search_code", query="  ") == {"results": [], "count": 0}
    assert ok(mcp, "find_similar_code", snippet="") == {"results": [], "count": 0}
    bad = error(mcp, "search_code", query="x", language="cobol")
    assert bad["type"] == "validation_error" and all(language in bad["message"] for language in LANGUAGES)
    assert ok(mcp, "search_code", query="x", limit=10**6)["count"] == 0  # clamped, nothing indexed
    assert ok(mcp, "find_similar_code", snippet="x" * 6000, limit=-3)["count"] == 0  # truncated
    assert error(mcp, "index_codebase", directory="/tmp", project="  ")["type"] == "validation_error"
