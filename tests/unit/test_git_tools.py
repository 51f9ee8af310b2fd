"""The git tools through an MCP client, in-process (inline mode, hashing embedder), every figure
checked against the git command line's own answer on a repository these tests build."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.git_repo import (
    AUTHORS,
    DAY,
    LATIN1_MESSAGE,
    RETRY_MESSAGE,
    build_repo,
    cli_log,
    commit,
    git,
    write,
)
from tests.mcp_thread import ThreadedClient, error, inline_client, ok


def _client(tmp_path: Path, repo_path: Path) -> Any:
    return inline_client(tmp_path, "hashing:256", repo_path=repo_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_repo(tmp_path / "repo")


@pytest.fixture
def mcp(tmp_path: Path, repo: Path) -> Iterator[ThreadedClient]:
    with _client(tmp_path, repo) as client:
        yield client


def _iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _head_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


def _message(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%B", sha).decode("utf-8", "replace").strip()


def test_search_commits_matches_git(mcp: ThreadedClient, repo: Path) -> None:
    found = ok(mcp, "search_commits", query="exponential backoff retry for the http client", limit=50)
    assert found["count"] == _head_count(repo)  # indexed on first use: every commit, once
    assert found["results"][0]["message"] == RETRY_MESSAGE
    by_sha = {c.sha: c for c in cli_log(repo)}
    for hit in found["results"]:
        cli = by_sha[hit["sha"]]
        assert (hit["author"], hit["author_email"]) == (cli.author, cli.email)
        assert hit["timestamp"] == _iso(cli.timestamp)
        assert hit["message"] == _message(repo, hit["sha"])
        assert hit["files_changed"] == [path for path, _, _ in cli.stats]
        assert hit["file_count"] == len(cli.stats)
        assert hit["insertions"] == sum(added for _, added, _ in cli.stats)
        assert hit["deletions"] == sum(deleted for _, _, deleted in cli.stats)
        assert 0 <= hit["score"] <= 1
    scores = [hit["score"] for hit in found["results"]]
    assert scores == sorted(scores, reverse=True)


def test_non_utf8_messages_are_indexed_and_found(mcp: ThreadedClient, repo: Path) -> None:
    declared = ok(mcp, "search_commits", query=LATIN1_MESSAGE, limit=1)["results"][0]
    assert declared["message"] == LATIN1_MESSAGE  # re-encoded by git from its declared Latin-1
    raw = ok(mcp, "search_commits", query="menu parser crash on empty input", limit=1)["results"][0]
    assert raw["message"] == "Fix caf\ufffd menu parser crash on empty input"  # undeclared: replaced
    assert raw["author"] == AUTHORS["erin"][0]


def test_search_filters(mcp: ThreadedClient, repo: Path) -> None:
    for author in ("Bob Builder", "bob builder", "BOB@example.com"):
        bob = ok(mcp, "search_commits", query="fix", author=author, limit=50)
        expected = git(repo, "log", "--author=bob@example.com", "--format=%H").decode().split()
        assert sorted(hit["sha"] for hit in bob["results"]) == sorted(expected)
    assert ok(mcp, "search_commits", query="fix", author="nobody")["count"] == 0
    since = datetime.fromtimestamp(time.time() - 22 * DAY, UTC)
    recent = ok(mcp, "search_commits", query="change", since=since.isoformat(), limit=50)
    expected = git(repo, "log", f"--since={since.isoformat()}", "--format=%H").decode().split()
    assert sorted(hit["sha"] for hit in recent["results"]) == sorted(expected)
    naive = ok(mcp, "search_commits", query="change", since=since.strftime("%Y-%m-%d"), limit=50)
    assert naive["count"] >= recent["count"]
    bad = error(mcp, "search_commits", query="x", since="last tuesday")
    assert bad["type"] == "validation_error" and "ISO 8601" in bad["message"]
    assert ok(mcp, "search_commits", query="   ") == {"results": [], "count": 0}
    assert ok(mcp, "search_commits", query="fix", limit=0)["count"] == 1  # clamped to 1
    assert ok(mcp, "search_commits", query="fix", limit=10**6)["count"] == _head_count(repo)  # to 50


def test_file_history_follows_renames_like_git(mcp: ThreadedClient, repo: Path) -> None:
    history = ok(mcp, "get_file_history", path="src/main.py")
    cli = cli_log(repo, "--follow", "--", "src/main.py")
    assert history["path"] == "src/main.py"
    assert [row["sha"] for row in history["results"]] == [c.sha for c in cli]
    assert any(row["path"] == "src/app.py" for row in history["results"])  # before the rename
    for row, expected in zip(history["results"], cli, strict=True):
        assert (row["insertions"], row["deletions"]) == expected.stats[0][1:]
        assert row["timestamp"] == _iso(expected.timestamp) and row["author"] == expected.author
    times = [row["timestamp"] for row in history["results"]]
    assert times == sorted(times, reverse=True)  # newest first
    assert ok(mcp, "get_file_history", path="src/main.py", limit=2)["count"] == 2
    assert ok(mcp, "get_file_history", path="src/main.py", limit=0)["count"] == 1  # clamped
    assert ok(mcp, "get_file_history", path="src/main.py", limit=10**6)["count"] == len(cli)
    spaced = ok(mcp, "get_file_history", path=str(repo / "docs" / "user guide.md"))  # absolute inside
    assert spaced["path"] == "docs/user guide.md" and spaced["count"] == 2
    binary = ok(mcp, "get_file_history", path="assets/logo.png")
    assert binary["count"] == 2 and all(
        row["insertions"] == row["deletions"] == 0 for row in binary["results"]
    )


def test_churn_hotspots_match_git(mcp: ThreadedClient, repo: Path) -> None:
    for days in (90, 365, 1):
        found = ok(mcp, "get_churn_hotspots", days=days, limit=50)
        tallies: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"count": 0, "ins": 0, "del": 0, "authors": set(), "emails": set(), "last": 0}
        )
        for c in cli_log(repo, f"--since={days}.days.ago"):
            for path, added, deleted in c.stats:
                tally = tallies[path]
                tally["count"] += 1
                tally["ins"] += added
                tally["del"] += deleted
                tally["authors"].add(c.author)
                tally["emails"].add(c.email)
                tally["last"] = max(tally["last"], c.timestamp)
        assert found["count"] == len(tallies)
        for row in found["results"]:
            tally = tallies[row["file_path"]]
            assert row["change_count"] == tally["count"]
            assert (row["total_insertions"], row["total_deletions"]) == (tally["ins"], tally["del"])
            assert set(row["authors"]) == tally["authors"] and set(row["author_emails"]) == tally["emails"]
            assert row["last_changed"] == _iso(tally["last"])
        counts = [row["change_count"] for row in found["results"]]
        assert counts == sorted(counts, reverse=True)
    top = ok(mcp, "get_churn_hotspots", days=90, limit=1)["results"]
    assert len(top) == 1 and top[0]["file_path"] == "src/main.py" and top[0]["change_count"] == 3
    # Clamped, not rejected: 0 days is one day, 10,000 days is a year.
    assert ok(mcp, "get_churn_hotspots", days=0)["count"] == ok(mcp, "get_churn_hotspots", days=1)["count"]
    assert (
        ok(mcp, "get_churn_hotspots", days=10_000, limit=999)["count"]
        == ok(mcp, "get_churn_hotspots", days=365, limit=50)["count"]
    )


def test_code_authors_match_git(mcp: ThreadedClient, repo: Path) -> None:
    found = ok(mcp, "get_code_authors", path="src/main.py")
    expected: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cli_log(repo, "--follow", "--", "src/main.py"):
        row = expected.setdefault((c.author, c.email), {"n": 0, "add": 0, "rm": 0, "times": []})
        row["n"] += 1
        row["add"] += c.stats[0][1]
        row["rm"] += c.stats[0][2]
        row["times"].append(c.timestamp)
    shortlog = git(repo, "shortlog", "-sne", "HEAD", "--", "src/main.py", "src/app.py").decode()
    assert len(shortlog.strip().splitlines()) == found["count"] == len(expected)
    for row in found["results"]:
        want = expected[(row["author"], row["author_email"])]
        assert (row["commit_count"], row["lines_added"], row["lines_removed"]) == (
            want["n"],
            want["add"],
            want["rm"],
        )
        assert row["first_commit"] == _iso(min(want["times"]))
        assert row["last_commit"] == _iso(max(want["times"]))
    counts = [row["commit_count"] for row in found["results"]]
    assert counts == sorted(counts, reverse=True)


def test_binary_file_authors_is_a_clear_error(mcp: ThreadedClient) -> None:
    failure = error(mcp, "get_code_authors", path="assets/logo.png")
    assert failure["type"] == "validation_error" and "binary" in failure["message"]


@pytest.mark.parametrize("path", ["../outside.py", "/etc/passwd", "src/../../x.py"])
@pytest.mark.parametrize("tool", ["get_file_history", "get_code_authors"])
def test_paths_outside_the_repository_are_rejected(mcp: ThreadedClient, tool: str, path: str) -> None:
    failure = error(mcp, tool, path=path)
    assert failure["type"] == "validation_error" and "outside the repository" in failure["message"]


@pytest.mark.parametrize("tool", ["get_file_history", "get_code_authors"])
def test_paths_absent_from_history_are_rejected(mcp: ThreadedClient, tool: str) -> None:
    for path in ("src/nope.py", "  ", "."):
        failure = error(mcp, tool, path=path)
        assert failure["type"] == "validation_error"
    assert "not in the history" in error(mcp, tool, path="src/nope.py")["message"]


def test_incremental_after_new_commits(mcp: ThreadedClient, repo: Path) -> None:
    cold = ok(mcp, "index_commits")
    assert cold["reason"] == "cold" and cold["commits_indexed"] == cold["commits_total"] == _head_count(repo)
    assert ok(mcp, "index_commits")["reason"] == "up_to_date"
    write(repo, "src/cache.py", "cache = {}\n")
    sha = commit(repo, "Cache parsed templates between requests", who="carol", days_ago=0)
    # search_commits indexes the new commit first: never stale.
    hit = ok(mcp, "search_commits", query="cache parsed templates between requests", limit=1)["results"][0]
    assert hit["sha"] == sha and hit["files_changed"] == ["src/cache.py"]
    for n in range(2):
        write(repo, f"src/more_{n}.py", "x = 1\n")
        commit(repo, f"More work {n}", who="dave", days_ago=0)
    more = ok(mcp, "index_commits")
    assert more["reason"] == "incremental" and more["commits_indexed"] == 2
    assert more["commits_total"] == _head_count(repo)


def test_history_rewrite_reindexes_without_duplicates(mcp: ThreadedClient, repo: Path) -> None:
    ok(mcp, "index_commits")
    dropped = git(repo, "rev-parse", "HEAD").decode().strip()
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    write(repo, "src/rewritten.py", "y = 2\n")
    kept = commit(repo, "Rewritten history: a different last commit", who="bob", days_ago=0)
    again = ok(mcp, "index_commits")
    assert again["reason"] == "rewritten" and again["commits_total"] == _head_count(repo)
    found = ok(mcp, "search_commits", query=RETRY_MESSAGE, limit=50)
    shas = [hit["sha"] for hit in found["results"]]
    assert dropped not in shas and kept in shas and len(shas) == len(set(shas)) == _head_count(repo)
    # An amended HEAD, found by a search alone.
    git(repo, "commit", "-q", "--amend", "-m", "Amended: the rewritten commit, renamed", who="bob")
    amended = ok(mcp, "search_commits", query="amended rewritten commit renamed", limit=50)
    shas = [hit["sha"] for hit in amended["results"]]
    assert kept not in shas and len(shas) == _head_count(repo)


def test_since_limits_the_index_and_widens(mcp: ThreadedClient, repo: Path) -> None:
    since = datetime.fromtimestamp(time.time() - 22 * DAY, UTC).isoformat()
    partial = ok(mcp, "index_commits", since=since)
    recent = len(git(repo, "log", f"--since={since}", "--format=%H").decode().split())
    assert partial["reason"] == "cold" and partial["commits_total"] == recent
    assert ok(mcp, "index_commits")["reason"] == "up_to_date"  # keeps what it covers
    wide = ok(mcp, "index_commits", since="2000-01-01")
    assert wide["reason"] == "widened" and wide["commits_total"] == _head_count(repo)
    assert error(mcp, "index_commits", since="soon")["type"] == "validation_error"


def test_repository_from_a_subfolder_uses_the_root(tmp_path: Path, repo: Path) -> None:
    with _client(tmp_path, repo / "src") as client:
        history = ok(client, "get_file_history", path="src/util.py")
        assert history["path"] == "src/util.py" and history["count"] == 2


def test_no_repository_is_a_git_error_for_every_tool(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("index_commits", {}),
        ("search_commits", {"query": "anything"}),
        ("get_file_history", {"path": "a.py"}),
        ("get_churn_hotspots", {}),
        ("get_code_authors", {"path": "a.py"}),
    ]
    with _client(tmp_path, plain) as client:
        for tool, arguments in calls:
            failure = error(client, tool, **arguments)
            assert failure["type"] == "git_error", tool
            assert str(plain) in failure["message"] and "LMS_REPO_PATH" in failure["message"]


def test_empty_repository(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with _client(tmp_path, empty) as client:
        assert ok(client, "search_commits", query="anything")["count"] == 0
        assert ok(client, "get_churn_hotspots")["count"] == 0
        assert ok(client, "index_commits")["head"] is None
        assert error(client, "get_file_history", path="a.py")["type"] == "validation_error"
