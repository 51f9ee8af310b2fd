"""search_code: hybrid candidates, the units the query names, then code-aware reordering.

The query is read once (:func:`~.query.read_query`). Its hybrid candidates (:mod:`.hybrid`:
dense + BM25, fused) are joined by the units it names (:mod:`.names`), which neither ranking may
reach when the name is a common word in the project; the whole set is then reordered knowing what
code is (:mod:`.ranking`): the definition of a named symbol first, tests and examples only when
asked for. A hit's ``score`` is that relevance, capped at 1.0; its ``similarity`` the plain
cosine similarity to the query, for judging how close the best match really is.
"""

from __future__ import annotations

from learning_memory.shared.contracts.code import CodeHit, SearchCodeRequest
from learning_memory.worker.code.search.hybrid import FUSION, Fusion, Scope, hybrid_candidates
from learning_memory.worker.code.search.names import named_units
from learning_memory.worker.code.search.query import read_query
from learning_memory.worker.code.search.ranking.rerank import rerank
from learning_memory.worker.code.search.ranking.weights import DEFAULT, Weights
from learning_memory.worker.services import WorkerServices


async def search_code(
    services: WorkerServices,
    request: SearchCodeRequest,
    weights: Weights = DEFAULT,
    fusion: Fusion = FUSION,
) -> list[CodeHit]:
    """``weights`` and ``fusion``: the reranking's and the fusion's settings (the benchmarks
    measure a rule by changing its setting)."""
    query = read_query(request.query)
    scope = Scope(request.project, request.language)
    depth = max(fusion.candidates, request.limit)
    found = await hybrid_candidates(services, query, scope, depth=depth, fusion=fusion)
    point_ids = found.top(fusion.candidates)
    named = await named_units(found.metadata, query, project=scope.project, language=scope.language)
    point_ids += [pid for pid in named.point_ids if pid not in point_ids]
    # For the reordering, how many units the candidates' files hold; vectors later, for the few
    # answered.
    candidates, file_sizes = await found.load(point_ids, with_file_sizes=True)
    ranked = rerank(
        query,
        candidates,
        weights,
        file_sizes=file_sizes,
        defined=named.defined,
        defining_modules=named.defining_modules,
    )
    return await found.hits(ranked[: request.limit])
