"""Code jobs: index a directory into a project, search units, list and delete projects.

Project names come from the metadata store (``indexed_files`` rows, one per indexed file), and
unit counts from the units' keyword rows, which exist from the moment a project is searchable;
how many of them still wait for their vector (``worker.code.index.filler``) is counted there too. A
project whose files hold no unit is listed with 0 units.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from learning_memory.shared.contracts.code import (
    COLLECTION,
    DELETE_PROJECT,
    INDEX_CODEBASE,
    LIST_PROJECTS,
    REINDEX_FILE,
    SEARCH_CODE,
    DeleteProjectRequest,
    DeleteProjectResponse,
    IndexCodebaseRequest,
    IndexCodebaseResponse,
    ListProjectsRequest,
    ListProjectsResponse,
    ProjectInfo,
    ReindexFileRequest,
    ReindexFileResponse,
    SearchCodeRequest,
    SearchCodeResponse,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.log import get_logger
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.indexer import CodeIndexer
from learning_memory.worker.code.search.search_code import search_code as hybrid_search
from learning_memory.worker.code.search.similar import find_similar
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, MatchValue, VectorStore

log = get_logger(__name__)


def _directory(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise ValidationError(f"directory must be an absolute path, got {raw!r}")
    if not path.exists():
        raise ValidationError(f"directory {raw!r} does not exist")
    if not path.is_dir():
        raise ValidationError(f"{raw!r} is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise ValidationError(f"directory {raw!r} is not readable by the worker (user id {os.getuid()})")
    return path


async def _existing_store(run: JobRun) -> VectorStore | None:
    """The store if the collection exists: listing, deleting and empty searches need no model."""
    store = await run.services.vectors()
    return store if await store.collection_exists(COLLECTION) else None


@job(INDEX_CODEBASE)
async def index_codebase(run: JobRun, request: IndexCodebaseRequest) -> IndexCodebaseResponse:
    root = _directory(request.directory)
    async with run.services.locks.hold("code", request.project):
        indexer = CodeIndexer(
            run.services, root, request.project, recursive=request.recursive, report=run.report
        )
        response = await indexer.run()
        metadata = await run.services.metadata()
        root = indexer.root
        async with run.services.writing_code_index(
            request.project, lambda shared: shared.set_root(request.project, root, request.recursive)
        ):
            await metadata.execute(
                "INSERT INTO project_roots (project, root, recursive) VALUES (?, ?, ?) "
                "ON CONFLICT (project) DO UPDATE SET root = excluded.root, recursive = excluded.recursive",
                (request.project, str(root), int(request.recursive)),
            )
    pending = await _fill_vectors(run, request.project)
    return response.model_copy(update={"vectors_pending": pending})


async def _fill_vectors(run: JobRun, project: str | None) -> int:
    """Start filling in the vectors of units written without them; how many still wait."""
    filler = run.services.vector_filler()
    if filler is None:
        return 0
    filler.wake()
    return await unit_store.waiting(await run.services.metadata(), project)


async def _project_of(run: JobRun, path: Path) -> tuple[str, Path, bool] | None:
    """The indexed project whose root holds ``path`` (the innermost, when roots nest)."""
    await run.services.current_code_index()
    rows = await (await run.services.metadata()).fetchall(
        "SELECT project, root, recursive FROM project_roots"
    )
    holders = [row for row in rows if path.is_relative_to(str(row["root"]))]
    if not holders:
        return None
    row = max(holders, key=lambda row: len(str(row["root"])))
    return str(row["project"]), Path(str(row["root"])), bool(row["recursive"])


@job(REINDEX_FILE)
async def reindex_file(run: JobRun, request: ReindexFileRequest) -> ReindexFileResponse:
    given = PurePosixPath(request.path)
    if not given.is_absolute():
        raise ValidationError(f"path must be absolute, got {request.path!r}")
    # Not resolved as a whole: a deleted file must still map to its project to be dropped.
    path = await asyncio.to_thread(lambda: Path(given.parent).resolve() / given.name)
    found = await _project_of(run, path)
    if found is None:
        return ReindexFileResponse(project=None, files_indexed=0, files_removed=0)
    project, root, recursive = found
    if not await asyncio.to_thread(root.is_dir):
        return ReindexFileResponse(project=project, files_indexed=0, files_removed=0)
    async with run.services.locks.hold("code", project):
        indexer = CodeIndexer(run.services, root, project, recursive=recursive)
        result = await indexer.run(only=PurePosixPath(path.relative_to(root).as_posix()))
    await _fill_vectors(run, project)
    return ReindexFileResponse(
        project=project, files_indexed=result.files_indexed, files_removed=result.files_removed
    )


@job(SEARCH_CODE)
async def search_code(run: JobRun, request: SearchCodeRequest) -> SearchCodeResponse:
    search = find_similar if request.mode == "semantic" else hybrid_search
    results = await search(run.services, request)
    filler = run.services.vector_filler()
    pending = (
        0 if filler is None else await unit_store.waiting(await run.services.metadata(), request.project)
    )
    if pending and filler is not None:
        # Rows left by a process that stopped before filling them (an inline server between
        # sessions) wait for no index job: a search that sees them starts the filler.
        filler.wake()
    return SearchCodeResponse(results=results, vectors_pending=pending)


@job(LIST_PROJECTS)
async def list_indexed_projects(run: JobRun, request: ListProjectsRequest) -> ListProjectsResponse:
    await run.services.current_code_index()
    metadata = await run.services.metadata()
    rows = await metadata.fetchall(
        "SELECT repo, MAX(indexed_at) AS last FROM indexed_files GROUP BY repo ORDER BY repo"
    )
    counts = await unit_store.unit_counts(metadata)
    if run.services.vector_filler() is None:  # nothing will fill them: the index is what it is
        counts = {project: (units, 0) for project, (units, _) in counts.items()}
    projects = [
        ProjectInfo(
            project=str(row["repo"]),
            units=units,
            vectors_pending=pending,
            last_indexed_at=datetime.fromtimestamp(row["last"], UTC) if row["last"] else None,
        )
        for row in rows
        for units, pending in [counts.get(str(row["repo"]), (0, 0))]
    ]
    return ListProjectsResponse(projects=projects)


@job(DELETE_PROJECT)
async def delete_project_index(run: JobRun, request: DeleteProjectRequest) -> DeleteProjectResponse:
    project = request.project
    async with run.services.locks.hold("code", project):
        store = await _existing_store(run)
        deleted = 0
        if store is not None:
            where = Filter((MatchValue("project", project),))
            deleted = await store.count(COLLECTION, where)
            await store.delete_by_filter(COLLECTION, where)
        if run.services.code_replica is not None:
            # This worker's replica is then behind the record, as every other's: the next refresh
            # reads the emptied record whole and forgets the project here too.
            await run.services.code_replica.shared.drop(project)
        metadata = await run.services.metadata()
        await unit_store.remove_project(metadata, project)
        # Rows last: if the job dies before, a retry still finds the project and finishes the job.
        await metadata.execute("DELETE FROM project_roots WHERE project = ?", (project,))
        files = await metadata.execute("DELETE FROM indexed_files WHERE repo = ?", (project,))
    log.info("code_project_deleted", project=project, units=deleted, files=files)
    return DeleteProjectResponse(project=project, units_deleted=deleted)
