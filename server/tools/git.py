"""Git tools: search_commits, get_file_history, get_churn_hotspots, get_code_authors,
and index_commits to build (or bring up to date) the commit index ahead of time.

The worker reads the repository at ``LMS_REPO_PATH`` (sent as an absolute path: one worker serves
sessions in many projects). Limits are clamped with a logged warning; a bad date or a path
outside the repository is a validation error; no repository is a git_error naming the setting.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.services.inputs import clamp, utf8_safe
from learning_memory.server.tool_answers import Results
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.git import (
    CHURN_HOTSPOTS,
    CODE_AUTHORS,
    FILE_HISTORY,
    INDEX_COMMITS,
    SEARCH_COMMITS,
    ChurnEntry,
    ChurnRequest,
    CodeAuthorsRequest,
    CodeAuthorsResponse,
    CommitHit,
    FileHistoryRequest,
    FileHistoryResponse,
    IndexCommitsRequest,
    IndexCommitsResponse,
    SearchCommitsRequest,
)
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS
from learning_memory.shared.errors import ValidationError

MAX_RESULTS = 50
MAX_HISTORY = 500
MAX_DAYS = 365
MAX_HOTSPOTS = 50


def _repo_path(ctx: Context[AppServices, Any]) -> str:
    return str(app_services(ctx).settings.repo_path.expanduser().absolute())


def _since(value: str | None) -> datetime | None:
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            f"since must be an ISO 8601 date or time (UTC unless it says), e.g. 2026-01-31 or "
            f"2026-01-31T09:30:00Z (got {value!r})"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _path(path: str) -> str:
    cleaned = utf8_safe(path).strip()
    if not cleaned:
        raise ValidationError("path must not be empty: give a file path relative to the repository's root")
    return cleaned


class FileHistory(FileHistoryResponse):
    """get_file_history's answer: the file's commits, newest first."""

    count: int


class CodeAuthors(CodeAuthorsResponse):
    """get_code_authors' answer: per author, what they changed of the file."""

    count: int


@tool(
    "index_commits",
    description=(
        "Index the repository's commit messages for search_commits (incremental from the last run; "
        "a rewritten history is re-indexed). search_commits does this by itself; call it ahead of "
        "time for a long history. Long runs answer with a job_id for get_job_status."
    ),
)
async def index_commits(
    ctx: Context[AppServices, Any],
    since: Annotated[
        str | None, Field(description="Only commits from this ISO 8601 date on (default: all).")
    ] = None,
) -> IndexCommitsResponse:
    repo = _repo_path(ctx)
    request = IndexCommitsRequest(repo_path=repo, since=_since(since))
    return await await_job(ctx, INDEX_COMMITS, request, dedupe_key=f"git-index:{repo}")


@tool(
    "search_commits",
    description=(
        "Find commits by meaning (their messages), best match first (score 0 to 1), with author, "
        "date, changed files and line counts. Indexes new commits first, so results are current."
    ),
)
async def search_commits(
    ctx: Context[AppServices, Any],
    query: Annotated[str, Field(description="What the change did, in plain words.")],
    author: Annotated[str | None, Field(description="Only this author (name or email).")] = None,
    since: Annotated[str | None, Field(description="Only commits since this ISO 8601 date (UTC).")] = None,
    limit: Annotated[int, Field(description=f"1 to {MAX_RESULTS} (default 10).")] = 10,
) -> Results[CommitHit]:
    moment = _since(since)
    query = utf8_safe(query).strip()[:MAX_CONTENT_CHARS]
    if not query:
        return Results[CommitHit].of([])
    request = SearchCommitsRequest(
        repo_path=_repo_path(ctx),
        query=query,
        author=(utf8_safe(author).strip() or None) if author else None,
        since=moment,
        limit=int(clamp("limit", limit, 1, MAX_RESULTS, "search_commits")),
    )
    found = await await_job(ctx, SEARCH_COMMITS, request)
    return Results[CommitHit].of(found.results)


@tool(
    "get_file_history",
    description="The commits that changed a file, newest first, following renames, with line counts.",
)
async def get_file_history(
    ctx: Context[AppServices, Any],
    path: Annotated[str, Field(description="The file, relative to the repository's root.")],
    limit: Annotated[int, Field(description=f"1 to {MAX_HISTORY} (default 100).")] = 100,
) -> FileHistory:
    request = FileHistoryRequest(
        repo_path=_repo_path(ctx),
        path=_path(path),
        limit=int(clamp("limit", limit, 1, MAX_HISTORY, "get_file_history")),
    )
    found = await await_job(ctx, FILE_HISTORY, request)
    return FileHistory(path=found.path, results=found.results, count=len(found.results))


@tool(
    "get_churn_hotspots",
    description=(
        "The files changed most often in the last `days`: change count, lines inserted and deleted, "
        "authors, last change."
    ),
)
async def get_churn_hotspots(
    ctx: Context[AppServices, Any],
    days: Annotated[int, Field(description=f"The window, 1 to {MAX_DAYS} days (default 90).")] = 90,
    limit: Annotated[int, Field(description=f"1 to {MAX_HOTSPOTS} (default 10).")] = 10,
) -> Results[ChurnEntry]:
    request = ChurnRequest(
        repo_path=_repo_path(ctx),
        days=int(clamp("days", days, 1, MAX_DAYS, "get_churn_hotspots")),
        limit=int(clamp("limit", limit, 1, MAX_HOTSPOTS, "get_churn_hotspots")),
    )
    found = await await_job(ctx, CHURN_HOTSPOTS, request)
    return Results[ChurnEntry].of(found.results)


@tool(
    "get_code_authors",
    description=(
        "Who wrote a file, following renames: per author, commits, lines added and removed, "
        "first and last commit."
    ),
)
async def get_code_authors(
    ctx: Context[AppServices, Any],
    path: Annotated[str, Field(description="The file, relative to the repository's root.")],
) -> CodeAuthors:
    request = CodeAuthorsRequest(repo_path=_repo_path(ctx), path=_path(path))
    found = await await_job(ctx, CODE_AUTHORS, request)
    return CodeAuthors(path=found.path, results=found.results, count=len(found.results))
