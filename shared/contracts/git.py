"""Git history: commit indexing and search, file history, churn hotspots, authorship.

The worker reads history with GitPython (one ``git log`` pass per question). Every request names
the repository the server looks at (``LMS_REPO_PATH``, made absolute by the server): one worker
serves every session on the machine, each in its own project. Paths in requests and answers are
relative to the repository's root, with "/" separators; timestamps are author dates, in UTC.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

COLLECTION = "commits"
MAX_MESSAGE_CHARS = 10_000
# A commit touching thousands of files (a vendored tree, a mass rename) would make a huge payload;
# file_count stays exact.
MAX_FILES_LISTED = 100
COMMIT_ID_NAMESPACE = uuid.UUID("5b0c1f0e-3f7a-4d64-9a4e-0c2f6d1b8e71")


def commit_point_id(repo: str, sha: str) -> str:
    """Deterministic: a retried or repeated index upserts the same point, never a second one."""
    return str(uuid.uuid5(COMMIT_ID_NAMESPACE, f"{repo}\0{sha}"))


class CommitHit(Contract):
    sha: str
    message: str
    author: str
    author_email: str
    timestamp: datetime
    files_changed: list[str]
    file_count: int
    insertions: int
    deletions: int
    score: float = Field(ge=0.0, le=1.0)


class IndexCommitsRequest(Contract):
    repo_path: str  # absolute; the repository is the one that contains it
    since: datetime | None = None  # index only commits from then on (as ``git log --since``)


IndexReason = Literal["cold", "incremental", "up_to_date", "rewritten", "widened"]


class IndexCommitsResponse(Contract):
    repo: str  # the repository's root
    head: str | None  # None for a repository with no commit yet
    reason: IndexReason  # rewritten: the last indexed commit left the history, all was re-indexed
    commits_indexed: int  # embedded and stored this run
    commits_total: int  # in the index for this repository now
    duration_ms: int


class SearchCommitsRequest(Contract):
    repo_path: str
    query: str = Field(min_length=1)
    author: str | None = None  # name or email, any case
    since: datetime | None = None
    limit: int = Field(default=10, ge=1, le=50)


class SearchCommitsResponse(Contract):
    results: list[CommitHit]
    indexed_now: int  # commits indexed first because the index was behind HEAD


class FileCommit(Contract):
    sha: str
    message: str
    author: str
    author_email: str
    timestamp: datetime
    path: str  # the file's path in this commit (it differs before a rename)
    insertions: int
    deletions: int


class FileHistoryRequest(Contract):
    repo_path: str
    path: str = Field(min_length=1)
    limit: int = Field(default=100, ge=1, le=500)


class FileHistoryResponse(Contract):
    path: str
    results: list[FileCommit]


class ChurnEntry(Contract):
    file_path: str
    change_count: int
    total_insertions: int
    total_deletions: int
    authors: list[str]
    author_emails: list[str]
    last_changed: datetime


class ChurnRequest(Contract):
    repo_path: str
    days: int = Field(default=90, ge=1, le=365)
    limit: int = Field(default=10, ge=1, le=50)


class ChurnResponse(Contract):
    results: list[ChurnEntry]
    commits_scanned: int


class AuthorStats(Contract):
    author: str
    author_email: str
    commit_count: int
    lines_added: int
    lines_removed: int
    first_commit: datetime
    last_commit: datetime


class CodeAuthorsRequest(Contract):
    repo_path: str
    path: str = Field(min_length=1)


class CodeAuthorsResponse(Contract):
    path: str
    results: list[AuthorStats]


# A cold index of a long history takes minutes: the batch queue, so other searches never wait.
INDEX_COMMITS: JobSpec[IndexCommitsRequest, IndexCommitsResponse] = JobSpec(
    "index_commits", IndexCommitsRequest, IndexCommitsResponse, Queue.BATCH, timeout_s=6 * 3600
)
# A search first indexes what HEAD gained (usually a few commits; the whole history on first use).
SEARCH_COMMITS: JobSpec[SearchCommitsRequest, SearchCommitsResponse] = JobSpec(
    "search_commits", SearchCommitsRequest, SearchCommitsResponse, Queue.INTERACTIVE, timeout_s=6 * 3600
)
FILE_HISTORY: JobSpec[FileHistoryRequest, FileHistoryResponse] = JobSpec(
    "get_file_history", FileHistoryRequest, FileHistoryResponse, Queue.INTERACTIVE, timeout_s=600
)
CHURN_HOTSPOTS: JobSpec[ChurnRequest, ChurnResponse] = JobSpec(
    "get_churn_hotspots", ChurnRequest, ChurnResponse, Queue.INTERACTIVE, timeout_s=600
)
CODE_AUTHORS: JobSpec[CodeAuthorsRequest, CodeAuthorsResponse] = JobSpec(
    "get_code_authors", CodeAuthorsRequest, CodeAuthorsResponse, Queue.INTERACTIVE, timeout_s=600
)
