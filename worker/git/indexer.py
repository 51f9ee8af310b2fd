"""Commit indexing: messages embedded into the ``commits`` collection, incrementally from a watermark.

The watermark (``worker.git.watermarks``: the last indexed HEAD, and the oldest date covered) says
what the index holds: every commit reachable from that HEAD (since that date). A run then:

- **cold** (no watermark): clears any points left for the repository (a run that died), and
  indexes HEAD's history;
- **incremental**: the watermark is an ancestor of HEAD: indexes ``watermark..HEAD``;
- **rewritten**: the watermark is no longer reachable (rebase, reset, amend, another branch):
  forgets the watermark, then the points, then indexes HEAD's history afresh, so commits that
  left the history leave the index, and none is stored twice;
- **widened**: asked for an earlier ``since`` than the index covers: indexes HEAD's history
  from then (the points already there are upserted again under the same ids).

The watermark is written last: a run that dies is redone by the next. Point ids derive from
(repository, sha), and the embedding cache spares the model a message it has seen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from git import GitCommandError

from learning_memory.shared.contracts.git import (
    COLLECTION,
    MAX_FILES_LISTED,
    MAX_MESSAGE_CHARS,
    IndexCommitsResponse,
    IndexReason,
    commit_point_id,
)
from learning_memory.shared.errors import GitError
from learning_memory.shared.jobs import ProgressReporter, no_progress
from learning_memory.shared.log import get_logger
from learning_memory.worker.git.log import Commit, iter_log
from learning_memory.worker.git.repo import GitRepo
from learning_memory.worker.services import WorkerServices
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    MatchValue,
    PayloadIndexType,
    PointData,
)

log = get_logger(__name__)

INDEXES: dict[str, PayloadIndexType] = {"repo": "keyword", "author_keys": "keyword", "timestamp": "integer"}
BATCH = 256  # commits read, embedded and written at a time
# The model reads ~256 tokens; a 50 KB changelog message only costs tokenising time.
MAX_TEXT_CHARS = 2_000


def embedding_text(commit: Commit) -> str:
    return commit.message[:MAX_TEXT_CHARS] or "(no message)"


def commit_payload(repo: str, commit: Commit) -> dict[str, Any]:
    return {
        "repo": repo,
        "sha": commit.sha,
        "message": commit.message[:MAX_MESSAGE_CHARS],
        "author": commit.author,
        "author_email": commit.author_email,
        # The author filter matches a name or an email, in any case.
        "author_keys": sorted({commit.author.strip().lower(), commit.author_email.strip().lower()}),
        "timestamp": commit.timestamp,
        "files_changed": [stat.path for stat in commit.files[:MAX_FILES_LISTED]],
        "file_count": len(commit.files),
        "insertions": commit.insertions,
        "deletions": commit.deletions,
    }


def repo_filter(repo: str) -> Filter:
    return Filter((MatchValue("repo", repo),))


def _next_batch(commits: Iterator[Commit]) -> list[Commit]:
    try:
        return list(islice(commits, BATCH))
    except GitCommandError as exc:
        raise GitError(f"git log failed: {exc.stderr.strip() or exc}") from None


class CommitIndexer:
    """One run over one repository: ``await CommitIndexer(services, repo).run(since)``."""

    def __init__(self, services: WorkerServices, repo: GitRepo, report: ProgressReporter = no_progress):
        self.services = services
        self.repo = repo
        self.report = report

    async def run(self, since: datetime | None = None) -> IndexCommitsResponse:
        started = time.perf_counter()
        key = self.repo.key
        head = await asyncio.to_thread(self.repo.head)
        mark = await self.services.watermarks.get(key)
        since_ts = since.timestamp() if since is not None else None
        reason, revisions, floor = await asyncio.to_thread(self._plan, head, mark, since_ts)
        indexed = 0
        if reason in ("cold", "rewritten") or head is None:
            await self._forget()
        if head is not None and reason != "up_to_date":
            indexed = await self._index(revisions, floor)
            await self.services.watermarks.set(self.repo.key, head, floor)
        total = await self._count()
        duration_ms = int((time.perf_counter() - started) * 1000)
        log.info("commits_indexed", repo=key, reason=reason, indexed=indexed, total=total, ms=duration_ms)
        return IndexCommitsResponse(
            repo=key,
            head=head,
            reason=reason,
            commits_indexed=indexed,
            commits_total=total,
            duration_ms=duration_ms,
        )

    def _plan(
        self, head: str | None, mark: tuple[str | None, float | None] | None, since_ts: float | None
    ) -> tuple[IndexReason, list[str], float | None]:
        """What to index: the reason, the revisions for ``git log``, and the date floor after."""
        if mark is None:
            return ("cold", [head] if head else [], since_ts)
        last, floor = mark
        if head is None:
            return ("rewritten", [], since_ts)
        if last is None or not self._is_ancestor(last, head):
            return ("rewritten", [head], floor if since_ts is None else since_ts)
        if since_ts is not None and (floor is not None and since_ts < floor):
            return ("widened", [head], since_ts)
        if last == head:
            return ("up_to_date", [], floor)
        return ("incremental", [f"{last}..{head}"], floor)

    def _is_ancestor(self, ancestor: str, head: str) -> bool:
        try:
            self.repo.repo.git.merge_base("--is-ancestor", ancestor, head)
        except GitCommandError:  # 1: not an ancestor; 128: the commit is gone (rewritten, collected)
            return False
        return True

    async def _index(self, revisions: list[str], floor: float | None) -> int:
        args = [
            *revisions,
            *([f"--since={datetime.fromtimestamp(floor, UTC).isoformat()}"] if floor is not None else []),
        ]
        total = int(await asyncio.to_thread(self.repo.repo.git.rev_list, "--count", *args))
        await self.report(0, total, "reading history")
        commits = iter_log(self.repo.repo, *args)
        done = 0
        try:
            while batch := await asyncio.to_thread(_next_batch, commits):
                await self._write(batch)
                done += len(batch)
                await self.report(min(done, total), total, f"{done} commits embedded")
        finally:
            commits.close()  # reaps git if the run stops early
        return done

    async def _write(self, batch: list[Commit]) -> None:
        embedder = await self.services.embedder()
        store = await self.services.collection(CollectionSpec(COLLECTION, embedder.dimension, INDEXES))
        vectors = await embedder.embed([embedding_text(commit) for commit in batch])
        key = self.repo.key
        points = [
            PointData(commit_point_id(key, commit.sha), vector, commit_payload(key, commit))
            for commit, vector in zip(batch, vectors, strict=True)
        ]
        await store.upsert(COLLECTION, points)

    async def _forget(self) -> None:
        """Watermark first: if the run dies after, the next one starts cold and clears again."""
        await self.services.watermarks.forget(self.repo.key)
        store = await self.services.vectors()
        if await store.collection_exists(COLLECTION):
            await store.delete_by_filter(COLLECTION, repo_filter(self.repo.key))

    async def _count(self) -> int:
        store = await self.services.vectors()
        if not await store.collection_exists(COLLECTION):
            return 0
        return await store.count(COLLECTION, repo_filter(self.repo.key))
