"""The retrieval modes the code-search benchmarks compare, run in this process.

``hybrid`` is what search_code answers; ``fused`` the same fused candidates without the
code-aware reordering; ``lexical`` BM25 alone (no model); ``semantic`` the dense side alone, as
find_similar_code compares a snippet. Only the first and the last are tools: the other two are
baselines, composed here from the search room's pieces (``worker.code.search``), so the job
contract carries no benchmark-only mode. They run over a data folder whose worker has stopped:
an embedded vector store admits one process at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from learning_memory.shared.contracts.code import CodeHit, SearchCodeRequest
from learning_memory.shared.settings import Settings

if TYPE_CHECKING:
    from learning_memory.worker.code.search.hybrid import Fusion
    from learning_memory.worker.code.search.ranking.weights import Weights
    from learning_memory.worker.services import WorkerServices

Mode = Literal["hybrid", "fused", "lexical", "semantic"]
MODES: tuple[Mode, ...] = get_args(Mode)


def open_services(
    data_dir: Path, *, fast_tier: bool = False, embedding_model: str | None = None
) -> WorkerServices:
    """A worker's services over ``data_dir``, in this process; ``fast_tier``: no dense side, as
    search_code answers before any vector is filled in. Close them after use."""
    from learning_memory.shared.log import configure_logging
    from learning_memory.worker.services import WorkerServices

    configure_logging("WARNING")
    settings = Settings(data_dir=data_dir, code_vectors=not fast_tier, queue="inline", log_level="WARNING")
    if embedding_model:
        settings = settings.model_copy(update={"embedding_model": embedding_model})
    return WorkerServices(settings)


async def search(
    services: WorkerServices,
    query: str,
    *,
    project: str | None,
    limit: int,
    mode: Mode,
    weights: Weights | None = None,
    fusion: Fusion | None = None,
) -> list[CodeHit]:
    """The hits of ``query`` in ``mode``, as the search job would answer them; ``weights`` and
    ``fusion``: the reranking's and the fusion's settings (search_code's own when None)."""
    from learning_memory.worker.code.search.hybrid import FUSION, Scope, hybrid_candidates
    from learning_memory.worker.code.search.query import read_query
    from learning_memory.worker.code.search.ranking.weights import DEFAULT
    from learning_memory.worker.code.search.search_code import search_code
    from learning_memory.worker.code.search.similar import find_similar

    fusion = fusion or FUSION
    if mode == "hybrid":
        request = SearchCodeRequest(query=query, project=project, limit=limit)
        return await search_code(services, request, weights or DEFAULT, fusion)
    if mode == "semantic":
        request = SearchCodeRequest(query=query, project=project, limit=limit, mode="semantic")
        return await find_similar(services, request)
    # The fused ranking as it stands before the reordering, both sides or BM25 alone.
    found = await hybrid_candidates(
        services,
        read_query(query),
        Scope(project),
        depth=max(fusion.candidates, limit),
        dense=mode == "fused",
        fusion=fusion,
    )
    candidates, _ = await found.load(found.top(limit))
    return await found.hits(candidates[:limit])
