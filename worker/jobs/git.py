"""Git jobs: index and search commits, and the three questions answered from history itself.

Indexing one repository is serialised per worker process (a lock per repository): a search
that finds the index behind HEAD indexes the new commits first, under the same lock, so two
runs never race on the watermark, and a search never answers from an index older than HEAD.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from git import GitCommandError

from learning_memory.shared.contracts.git import (
    CHURN_HOTSPOTS,
    CODE_AUTHORS,
    COLLECTION,
    FILE_HISTORY,
    INDEX_COMMITS,
    SEARCH_COMMITS,
    ChurnRequest,
    ChurnResponse,
    CodeAuthorsRequest,
    CodeAuthorsResponse,
    CommitHit,
    FileHistoryRequest,
    FileHistoryResponse,
    IndexCommitsRequest,
    IndexCommitsResponse,
    SearchCommitsRequest,
    SearchCommitsResponse,
)
from learning_memory.shared.errors import GitError
from learning_memory.shared.log import get_logger
from learning_memory.worker.git import analyze
from learning_memory.worker.git.indexer import INDEXES, CommitIndexer
from learning_memory.worker.git.repo import GitRepo, open_repo
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import CollectionSpec, Condition, Filter, MatchValue, Range

log = get_logger(__name__)
T = TypeVar("T")


async def _git(fn: Callable[[], T]) -> T:
    """Blocking git work off the event loop; a failing git command is a git_error."""
    try:
        return await asyncio.to_thread(fn)
    except GitCommandError as exc:
        raise GitError(f"git failed: {exc.stderr.strip() or exc}") from None


async def _repo(repo_path: str) -> GitRepo:
    return await asyncio.to_thread(open_repo, repo_path)


@job(INDEX_COMMITS)
async def index_commits(run: JobRun, request: IndexCommitsRequest) -> IndexCommitsResponse:
    repo = await _repo(request.repo_path)
    async with run.services.locks.hold("git", repo.key):
        return await CommitIndexer(run.services, repo, run.report).run(request.since)


async def _catch_up(run: JobRun, repo: GitRepo) -> int:
    """Index what HEAD gained since the last run; the common case (nothing) costs two reads."""
    mark = await run.services.watermarks.get(repo.key)
    if mark is not None and mark[0] == await asyncio.to_thread(repo.head):
        return 0
    async with run.services.locks.hold("git", repo.key):
        done = await CommitIndexer(run.services, repo, run.report).run()
    return done.commits_indexed


@job(SEARCH_COMMITS)
async def search_commits(run: JobRun, request: SearchCommitsRequest) -> SearchCommitsResponse:
    repo = await _repo(request.repo_path)
    indexed_now = await _catch_up(run, repo)
    store = await run.services.vectors()
    if not await store.collection_exists(COLLECTION):
        return SearchCommitsResponse(results=[], indexed_now=indexed_now)
    embedder = await run.services.embedder()
    query = (await embedder.embed([request.query]))[0]
    store = await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension, INDEXES))
    conditions: list[Condition] = [MatchValue("repo", repo.key)]
    if request.author:
        conditions.append(MatchValue("author_keys", request.author.strip().lower()))
    if request.since is not None:
        conditions.append(Range("timestamp", gte=request.since.timestamp()))
    hits = await store.search(COLLECTION, query, limit=request.limit, filter=Filter(tuple(conditions)))
    results = [
        CommitHit(
            sha=hit.payload["sha"],
            message=hit.payload["message"],
            author=hit.payload["author"],
            author_email=hit.payload["author_email"],
            timestamp=hit.payload["timestamp"],
            files_changed=hit.payload["files_changed"],
            file_count=hit.payload["file_count"],
            insertions=hit.payload["insertions"],
            deletions=hit.payload["deletions"],
            # Cosine similarity is in [-1, 1]; the contract promises [0, 1].
            score=min(1.0, max(0.0, hit.score)),
        )
        for hit in hits
    ]
    results.sort(key=lambda hit: hit.score, reverse=True)
    return SearchCommitsResponse(results=results, indexed_now=indexed_now)


@job(FILE_HISTORY)
async def get_file_history(run: JobRun, request: FileHistoryRequest) -> FileHistoryResponse:
    repo = await _repo(request.repo_path)
    path, results = await _git(lambda: analyze.file_history(repo, request.path, request.limit))
    return FileHistoryResponse(path=path, results=results)


@job(CHURN_HOTSPOTS)
async def get_churn_hotspots(run: JobRun, request: ChurnRequest) -> ChurnResponse:
    repo = await _repo(request.repo_path)
    results, scanned = await _git(lambda: analyze.churn_hotspots(repo, request.days, request.limit))
    return ChurnResponse(results=results, commits_scanned=scanned)


@job(CODE_AUTHORS)
async def get_code_authors(run: JobRun, request: CodeAuthorsRequest) -> CodeAuthorsResponse:
    repo = await _repo(request.repo_path)
    path, results = await _git(lambda: analyze.code_authors(repo, request.path))
    return CodeAuthorsResponse(path=path, results=results)
