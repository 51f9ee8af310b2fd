"""Every job contract, by capability; the registry both sides look jobs up in."""

from __future__ import annotations

from typing import Any

from learning_memory.shared.contracts import (
    browse,
    capture,
    code,
    context,
    curation,
    diagnostics,
    experiences,
    git,
    learning,
    memory,
    porting,
)
from learning_memory.shared.jobs import JobSpec

ALL_SPECS: tuple[JobSpec[Any, Any], ...] = (
    diagnostics.NOOP,
    diagnostics.PING,
    diagnostics.PING_BATCH,
    memory.STORE_MEMORY,
    memory.RETRIEVE_MEMORIES,
    memory.LIST_MEMORIES,
    memory.DELETE_MEMORY,
    experiences.PERSIST_EXPERIENCE,
    experiences.SEARCH_EXPERIENCES,
    code.INDEX_CODEBASE,
    code.SEARCH_CODE,
    code.LIST_PROJECTS,
    code.DELETE_PROJECT,
    git.INDEX_COMMITS,
    git.SEARCH_COMMITS,
    git.FILE_HISTORY,
    git.CHURN_HOTSPOTS,
    git.CODE_AUTHORS,
    learning.GET_CLUSTERS,
    learning.GET_CLUSTER_MEMBERS,
    learning.VALIDATE_VALUE,
    learning.STORE_VALUE,
    learning.LIST_VALUES,
    context.ASSEMBLE_CONTEXT,
    context.PREMORTEM,
    context.EXPAND_CONTEXT,
    code.REINDEX_FILE,
    capture.MINE_SESSION,
    browse.BROWSE_EXPERIENCES,
    browse.CLUSTER_MAP,
    browse.AUDIT,
    browse.OVERVIEW,
    curation.UPDATE_MEMORY,
    curation.DELETE_MEMORY_RECORDED,
    curation.SET_VALUE_STATE,
    curation.MARK_EXPERIENCE,
    curation.MERGE_MEMORIES,
    curation.MERGE_EXPERIENCES,
    curation.UNDO_CHANGE,
    curation.LIST_CHANGES,
    porting.EXPORT_ITEMS,
    porting.IMPORT_ITEMS,
    porting.ADOPT_VALUES,
)
SPECS_BY_NAME: dict[str, JobSpec[Any, Any]] = {spec.name: spec for spec in ALL_SPECS}
