"""Code indexing and search.

Units (functions, classes, methods and their nearest equivalents) are parsed with tree-sitter,
embedded with what a reader needs (qualified name, signature, docstring, body), and stored in
the ``code_units`` collection, one point per unit, filtered by project and language.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

Language = Literal[
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "kotlin",
    "swift",
    "scala",
]
LANGUAGES: tuple[str, ...] = get_args(Language)
UnitType = Literal["function", "class", "method", "module"]
ErrorType = Literal["parse_error", "encoding_error", "io_error"]
COLLECTION = "code_units"
MAX_SNIPPET_CHARS = 5_000
UNIT_ID_NAMESPACE = uuid.UUID("0f6a4d52-8b1e-4c1a-9d0b-2b7a1e9c4f33")


def unit_id(project: str, file_path: str, qualified_name: str, start_line: int) -> str:
    """Deterministic: re-indexing a file, or a retried job, replaces its units, never duplicates."""
    return str(uuid.uuid5(UNIT_ID_NAMESPACE, f"{project}\0{file_path}\0{qualified_name}\0{start_line}"))


class CodeUnit(Contract):
    project: str
    file_path: str  # relative to the indexed directory, with "/" separators
    language: Language
    unit_type: UnitType
    name: str
    qualified_name: str  # e.g. "Outer.Inner.method"
    signature: str
    docstring: str | None = None  # the docstring or leading comment, cleaned of comment markers
    body: str  # the unit's source text
    start_line: int  # 1-based, inclusive
    end_line: int
    line_count: int
    complexity: int | None = None  # cyclomatic, from the syntax tree
    has_docstring: bool

    @property
    def id(self) -> str:
        return unit_id(self.project, self.file_path, self.qualified_name, self.start_line)


class FileError(Contract):
    file_path: str
    error_type: ErrorType
    message: str


class IndexCodebaseRequest(Contract):
    directory: str  # absolute, validated by the server
    project: str = Field(min_length=1, max_length=200)
    recursive: bool = True


class IndexCodebaseResponse(Contract):
    project: str
    files_indexed: int  # parsed and embedded this run (new or changed)
    files_unchanged: int  # skipped by content hash
    files_removed: int  # gone from disk: their units deleted
    files_skipped: int  # not source, too big, binary, minified, unsupported
    units_indexed: int
    errors: list[FileError]
    duration_ms: int
    # Units of the project whose meaning vectors are still being computed in the background: the
    # project is searchable now (keywords and code-aware ranking); dense matches fill in as they land.
    vectors_pending: int = 0


class CodeHit(Contract):
    id: str
    project: str
    file_path: str
    name: str
    qualified_name: str
    unit_type: UnitType
    signature: str
    language: Language
    start_line: int
    end_line: int
    line_count: int
    complexity: int | None = None
    has_docstring: bool
    # search_code: relevance from fusing the semantic and the keyword ranking, 1.0 = first in
    # both; find_similar_code: the cosine similarity. Results are sorted by it.
    score: float = Field(ge=0.0, le=1.0)
    similarity: float | None = None  # cosine similarity to the query (None: keyword-only search)


SearchMode = Literal["hybrid", "semantic"]


class SearchCodeRequest(Contract):
    query: str = Field(min_length=1)  # a question or a name; for find_similar_code, the snippet
    project: str | None = None
    language: Language | None = None
    limit: int = Field(default=10, ge=1, le=50)
    # hybrid: search_code (dense + BM25, fused and reranked); semantic: find_similar_code (the
    # dense side alone).
    mode: SearchMode = "hybrid"


class SearchCodeResponse(Contract):
    results: list[CodeHit]
    vectors_pending: int = 0  # of the projects searched (see IndexCodebaseResponse)


class ProjectInfo(Contract):
    project: str
    units: int
    vectors_pending: int = 0  # see IndexCodebaseResponse; 0: the index is complete
    # When a file of it was last (re)indexed: the last run that found something to read.
    last_indexed_at: datetime | None = Field(default=None, exclude_if=lambda value: value is None)


class ListProjectsRequest(Contract):
    pass


class ListProjectsResponse(Contract):
    projects: list[ProjectInfo]


class ReindexFileRequest(Contract):
    path: str  # absolute


class ReindexFileResponse(Contract):
    project: str | None  # the indexed project holding the file; None when none does
    files_indexed: int  # 1 when the file was (re)read, 0 when unchanged or not indexed
    files_removed: int  # 1 when its units were dropped (deleted, or no longer wanted)


class DeleteProjectRequest(Contract):
    project: str


class DeleteProjectResponse(Contract):
    project: str
    units_deleted: int


# Indexing a large repository takes minutes: the batch queue, so searches never wait behind it.
INDEX_CODEBASE: JobSpec[IndexCodebaseRequest, IndexCodebaseResponse] = JobSpec(
    "index_codebase", IndexCodebaseRequest, IndexCodebaseResponse, Queue.BATCH, timeout_s=6 * 3600
)
SEARCH_CODE: JobSpec[SearchCodeRequest, SearchCodeResponse] = JobSpec(
    "search_code", SearchCodeRequest, SearchCodeResponse, Queue.INTERACTIVE, timeout_s=120
)
# One edited file (the Claude Code hook): the batch queue, behind or beside any index job.
REINDEX_FILE: JobSpec[ReindexFileRequest, ReindexFileResponse] = JobSpec(
    "reindex_file", ReindexFileRequest, ReindexFileResponse, Queue.BATCH, timeout_s=600
)
LIST_PROJECTS: JobSpec[ListProjectsRequest, ListProjectsResponse] = JobSpec(
    "list_indexed_projects", ListProjectsRequest, ListProjectsResponse, Queue.INTERACTIVE, timeout_s=60
)
DELETE_PROJECT: JobSpec[DeleteProjectRequest, DeleteProjectResponse] = JobSpec(
    "delete_project_index", DeleteProjectRequest, DeleteProjectResponse, Queue.BATCH, timeout_s=600
)
