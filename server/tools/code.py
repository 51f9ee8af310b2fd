"""Code tools: index_codebase, search_code, find_similar_code, and, so that nobody is
stuck with a stale index, list_indexed_projects and delete_project_index.

Indexing runs on the batch queue, so searches never wait behind it. A project already being
indexed is joined, not indexed twice at once. A call that outlasts its wait budget answers
with a job id for get_job_status, and sends progress notifications meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from learning_memory.server.services import AppServices, app_services, await_job
from learning_memory.server.services.inputs import clamp, utf8_safe
from learning_memory.server.tool_answers import Results, omitted
from learning_memory.server.tool_registry import tool
from learning_memory.shared.contracts.code import (
    DELETE_PROJECT,
    INDEX_CODEBASE,
    LANGUAGES,
    LIST_PROJECTS,
    MAX_SNIPPET_CHARS,
    SEARCH_CODE,
    CodeHit,
    DeleteProjectRequest,
    DeleteProjectResponse,
    IndexCodebaseRequest,
    IndexCodebaseResponse,
    Language,
    ListProjectsRequest,
    ListProjectsResponse,
    SearchCodeRequest,
)
from learning_memory.shared.contracts.memory import MAX_CONTENT_CHARS
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
MAX_RESULTS = 50
MAX_PROJECT_CHARS = 200


def _project(project: str) -> str:
    name = utf8_safe(project).strip()
    if not name:
        raise ValidationError("project must not be empty")
    if len(name) > MAX_PROJECT_CHARS:
        raise ValidationError(
            f"project is too long: {len(name)} characters, the limit is {MAX_PROJECT_CHARS}"
        )
    return name


def _directory(directory: str, repo_path: Path) -> Path:
    """Absolute as given, or relative to LMS_REPO_PATH. Whether it exists is for the worker to say:
    it is the one that reads it (in a scaled-out set-up, on another machine)."""
    path = Path(utf8_safe(directory).strip() or ".").expanduser()
    return path if path.is_absolute() else repo_path / path


def _pending_note(pending: int) -> str | None:
    """What the model is told while an index's vectors are still being filled in."""
    if not pending:
        return None
    return (
        f"{pending} units are still being embedded in the background: keyword and name matches "
        "are complete, matches by meaning cover the rest. list_indexed_projects shows progress."
    )


class IndexedCodebase(IndexCodebaseResponse):
    """index_codebase's answer: what the run did, and a note while vectors are pending."""

    note: str | None = omitted()


class CodeHits(Results[CodeHit]):
    """search_code's and find_similar_code's answer: the units, best match first."""

    vectors_pending: int | None = omitted("Units of the projects searched still waiting for vectors.")
    note: str | None = omitted()


class IndexedProjects(ListProjectsResponse):
    """list_indexed_projects' answer."""

    count: int


async def _search(ctx: Context[AppServices, Any], request: SearchCodeRequest) -> CodeHits:
    found = await await_job(ctx, SEARCH_CODE, request)
    pending = found.vectors_pending or None
    return CodeHits(
        results=found.results,
        count=len(found.results),
        vectors_pending=pending,
        note=_pending_note(found.vectors_pending),
    )


@tool(
    "index_codebase",
    description=(
        "Index a directory's source code for search_code (incremental: unchanged files are skipped). "
        "Searchable when it returns; vectors for matches by meaning fill in in the background "
        f"(vectors_pending). Languages: {', '.join(LANGUAGES)}. Long runs answer with a job_id for "
        "get_job_status."
    ),
)
async def index_codebase(
    ctx: Context[AppServices, Any],
    directory: Annotated[str, Field(description="The directory (absolute, or relative to the repository).")],
    project: Annotated[str, Field(description="A name for this codebase, used to filter searches.")],
    recursive: bool = True,
) -> IndexedCodebase:
    name = _project(project)
    path = _directory(directory, app_services(ctx).settings.repo_path)
    request = IndexCodebaseRequest(directory=str(path), project=name, recursive=recursive)
    stats = await await_job(ctx, INDEX_CODEBASE, request, dedupe_key=f"index:{name}")
    return IndexedCodebase.model_validate({**dict(stats), "note": _pending_note(stats.vectors_pending)})


@tool(
    "search_code",
    description=(
        "Find functions, classes, methods and a file's module-level code (unit_type module) by what "
        "they do or by the words in them (meaning and keywords combined), best match first. "
        "score: 1.0 = top by both; similarity: cosine to the query."
    ),
)
async def search_code(
    ctx: Context[AppServices, Any],
    query: Annotated[str, Field(description="What the code does, in plain words or identifiers.")],
    project: str | None = None,
    language: Language | None = None,
    limit: Annotated[int, Field(description=f"1 to {MAX_RESULTS} (default 10).")] = 10,
) -> CodeHits:
    query = utf8_safe(query).strip()[:MAX_CONTENT_CHARS]
    if not query:
        return CodeHits(results=[], count=0)
    request = SearchCodeRequest(
        query=query,
        project=project,
        language=language,
        limit=int(clamp("limit", limit, 1, MAX_RESULTS, "search_code")),
    )
    return await _search(ctx, request)


@tool(
    "find_similar_code",
    description=f"Code similar to a snippet (up to {MAX_SNIPPET_CHARS:,} characters), best match first.",
)
async def find_similar_code(
    ctx: Context[AppServices, Any],
    snippet: str,
    project: str | None = None,
    limit: Annotated[int, Field(description=f"1 to {MAX_RESULTS} (default 10).")] = 10,
) -> CodeHits:
    snippet = utf8_safe(snippet)
    if not snippet.strip():
        return CodeHits(results=[], count=0)
    if len(snippet) > MAX_SNIPPET_CHARS:
        log.warning("tool.argument_truncated", tool="find_similar_code", length=len(snippet))
        snippet = snippet[:MAX_SNIPPET_CHARS]
    limit = int(clamp("limit", limit, 1, MAX_RESULTS, "find_similar_code"))
    request = SearchCodeRequest(query=snippet, project=project, limit=limit, mode="semantic")
    return await _search(ctx, request)


@tool(
    "list_indexed_projects",
    description="The indexed projects, with their unit counts and how many still wait for vectors.",
)
async def list_indexed_projects(ctx: Context[AppServices, Any]) -> IndexedProjects:
    found = await await_job(ctx, LIST_PROJECTS, ListProjectsRequest())
    return IndexedProjects(projects=found.projects, count=len(found.projects))


@tool("delete_project_index", description="Remove a project's code index (the files stay).")
async def delete_project_index(ctx: Context[AppServices, Any], project: str) -> DeleteProjectResponse:
    return await await_job(ctx, DELETE_PROJECT, DeleteProjectRequest(project=_project(project)))
