"""find_similar_code: the dense side alone. A pasted snippet is compared by meaning; its words
would mostly match every unit that uses the same library."""

from __future__ import annotations

from learning_memory.shared.contracts.code import COLLECTION, CodeHit, SearchCodeRequest
from learning_memory.worker.code.index.units import collection_spec
from learning_memory.worker.code.search.candidate import Candidate
from learning_memory.worker.code.search.hybrid import Scope, payloads
from learning_memory.worker.code.search.query import query_text
from learning_memory.worker.services import WorkerServices

# A snippet is compared by its first 128 tokens (~500 characters of code): the model's cost grows
# with length, and the head of a unit (its signature and first lines) says what it is. What the
# cut costs is measured by bench code_quality.
MAX_SNIPPET_EMBED_TOKENS = 128


async def find_similar(services: WorkerServices, request: SearchCodeRequest) -> list[CodeHit]:
    """The units closest to the snippet ``request.query``; each hit's score is its cosine similarity."""
    scope = Scope(request.project, request.language)
    await services.current_code_index(scope.project)
    store = await services.vectors()
    if not services.settings.code_vectors or not await store.collection_exists(COLLECTION):
        return []
    embedder = await services.embedder()
    vector = (await embedder.embed([embedder.head(query_text(request.query), MAX_SNIPPET_EMBED_TOKENS)]))[0]
    # Checks the dimension against the model's, with the message that says how to re-index.
    store = await services.collection(collection_spec(embedder.dimension))
    found = await store.search(
        COLLECTION, vector, limit=request.limit, filter=scope.filter(), with_payload=False
    )
    ranked = sorted(((hit.id, hit.score) for hit in found), key=lambda item: item[1], reverse=True)
    units, _ = await payloads(await services.metadata(), store, [pid for pid, _ in ranked])
    return [Candidate(pid, score, units[pid]).hit(similarity=score) for pid, score in ranked if pid in units]
