"""The commits a session made: subject and changed files, read with GitPython in its worktree.

A worktree that is gone, a folder that is no repository, a commit since rebased away: that commit
is left out quietly, and the episode names its goal another way.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from git import Repo
from git.exc import GitCommandError, GitCommandNotFound, InvalidGitRepositoryError, NoSuchPathError

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.log import get_logger
from learning_memory.worker.capture.episodes import CommitInfo

log = get_logger(__name__)
MAX_FILES = 500  # a vendoring commit's thousands of files say nothing of a fix


def session_commits(events: Iterable[SessionEvent]) -> dict[str, CommitInfo]:
    """Every commit event's new HEAD, read in the worktree it was made in."""
    heads: dict[str, str] = {}
    for event in events:
        if event.type == "commit" and event.head:
            heads.setdefault(event.head, event.worktree)
    found: dict[str, CommitInfo] = {}
    repos: dict[str, Repo | None] = {}
    try:
        for head, worktree in heads.items():
            if worktree not in repos:
                repos[worktree] = _open(Path(worktree))
            repo = repos[worktree]
            info = _read(repo, head) if repo is not None else None
            if info is not None:
                found[head] = info
    finally:
        for repo in repos.values():
            if repo is not None:
                repo.close()
    return found


def _open(worktree: Path) -> Repo | None:
    try:
        return Repo(worktree, search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError, GitCommandNotFound, OSError):
        log.info("capture.no_repository", worktree=str(worktree))
        return None


def _read(repo: Repo, sha: str) -> CommitInfo | None:
    try:
        commit = repo.commit(sha)
        # Against the first parent (or the empty tree for a root commit): what the commit changed.
        names = repo.git.diff_tree("--no-commit-id", "--name-only", "-r", "--root", "-z", commit.hexsha)
        subject = commit.summary
    except (ValueError, GitCommandError, OSError) as exc:
        log.info("capture.commit_unreadable", sha=sha, error=repr(exc))
        return None
    files = tuple(name for name in names.split("\0") if name)[:MAX_FILES]
    text = subject.decode("utf-8", "replace") if isinstance(subject, bytes) else subject
    return CommitInfo(commit.hexsha, text.strip(), files)
