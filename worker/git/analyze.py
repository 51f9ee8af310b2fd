"""File history, churn hotspots and authorship, each from one ``git log`` pass.

These read the repository, not the commit index: they are exact, and as fresh as HEAD.
They block (a git process, parsing), so the jobs run them in a thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from learning_memory.shared.contracts.git import AuthorStats, ChurnEntry, FileCommit
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.git.log import Commit, FileStat, iter_log
from learning_memory.worker.git.repo import GitRepo

DAY_S = 24 * 3600


def _stat_for(commit: Commit) -> FileStat | None:
    """With ``--follow`` git diffs only the followed file: its stat, if the commit changed it."""
    return commit.files[0] if commit.files else None


def _follow(repo: GitRepo, path: str, limit: int | None = None) -> list[Commit]:
    """The commits that changed ``path``, newest first, across its renames."""
    if repo.head() is None:
        raise ValidationError(f"{path!r} has no history: the repository {repo.root} has no commit yet")
    args = ["--follow", *([f"--max-count={limit}"] if limit else []), "--", path]
    commits = list(iter_log(repo.repo, *args))
    if not commits:
        raise ValidationError(
            f"{path!r} is not in the history of {repo.root}: no commit reachable from HEAD touches it; "
            "give a path relative to the repository's root"
        )
    return commits


def file_history(repo: GitRepo, raw_path: str, limit: int) -> tuple[str, list[FileCommit]]:
    path = repo.relative(raw_path)
    results = []
    for commit in _follow(repo, path, limit):
        stat = _stat_for(commit)
        results.append(
            FileCommit(
                sha=commit.sha,
                message=commit.message,
                author=commit.author,
                author_email=commit.author_email,
                timestamp=commit.when,
                path=stat.path if stat else path,
                insertions=stat.insertions if stat else 0,
                deletions=stat.deletions if stat else 0,
            )
        )
    return path, results


@dataclass
class _Tally:
    commits: int = 0
    insertions: int = 0
    deletions: int = 0
    first: int | None = None
    last: int = 0
    names: dict[str, None] = field(default_factory=dict)  # insertion-ordered sets
    emails: dict[str, None] = field(default_factory=dict)

    def add(self, commit: Commit, insertions: int, deletions: int) -> None:
        self.commits += 1
        self.insertions += insertions
        self.deletions += deletions
        self.first = commit.timestamp if self.first is None else min(self.first, commit.timestamp)
        self.last = max(self.last, commit.timestamp)
        self.names.setdefault(commit.author)
        self.emails.setdefault(commit.author_email)


def _utc(timestamp: int) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


def code_authors(repo: GitRepo, raw_path: str) -> tuple[str, list[AuthorStats]]:
    path = repo.relative(raw_path)
    commits = _follow(repo, path)
    latest = next((stat for commit in commits if (stat := _stat_for(commit)) is not None), None)
    if latest is not None and latest.binary:
        raise ValidationError(
            f"{path!r} is a binary file: git counts no lines in it, so there are no per-author line "
            "figures; get_file_history lists its commits"
        )
    tallies: dict[tuple[str, str], _Tally] = {}
    for commit in commits:
        stat = _stat_for(commit)
        tally = tallies.setdefault((commit.author, commit.author_email), _Tally())
        tally.add(commit, stat.insertions if stat else 0, stat.deletions if stat else 0)
    ranked = sorted(
        tallies.items(),
        key=lambda item: (-item[1].commits, -(item[1].insertions + item[1].deletions), item[0]),
    )
    return path, [
        AuthorStats(
            author=name,
            author_email=email,
            commit_count=tally.commits,
            lines_added=tally.insertions,
            lines_removed=tally.deletions,
            first_commit=_utc(tally.first if tally.first is not None else tally.last),
            last_commit=_utc(tally.last),
        )
        for (name, email), tally in ranked
    ]


def churn_hotspots(
    repo: GitRepo, days: int, limit: int, now: float | None = None
) -> tuple[list[ChurnEntry], int]:
    """Files by the number of commits that changed them in the last ``days`` (commits that
    landed then, as ``git log --since``); merges count through their branches' commits."""
    if repo.head() is None:
        return [], 0
    cutoff = _utc(int((time.time() if now is None else now) - days * DAY_S))
    tallies: dict[str, _Tally] = {}
    scanned = 0
    for commit in iter_log(repo.repo, f"--since={cutoff.isoformat()}"):
        scanned += 1
        for stat in commit.files:
            tallies.setdefault(stat.path, _Tally()).add(commit, stat.insertions, stat.deletions)
    ranked = sorted(
        tallies.items(),
        key=lambda item: (-item[1].commits, -(item[1].insertions + item[1].deletions), item[0]),
    )[:limit]
    return [
        ChurnEntry(
            file_path=path,
            change_count=tally.commits,
            total_insertions=tally.insertions,
            total_deletions=tally.deletions,
            authors=list(tally.names),
            author_emails=list(tally.emails),
            last_changed=_utc(tally.last),
        )
        for path, tally in ranked
    ], scanned
