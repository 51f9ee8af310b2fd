"""Values suggested from elsewhere (another project's export, a team's Markdown file), validated here.

A value means something only next to the experiences it was validated against; another
project's clusters are not this store's. So a suggestion counts as a value only once a cluster of
its axis here takes it: its distance to that cluster's centroid within the cluster's threshold,
as ``validate_value`` judges (the nearest such cluster wins). It is then stored as ``store_value``
stores any value, with that cluster's members and anchors. The rest are answered with the
nearest cluster's figures and why, and stored nowhere.
"""

from __future__ import annotations

from learning_memory.shared.contracts.learning import VALUES_COLLECTION, StoreValueRequest, cluster_id
from learning_memory.shared.contracts.porting import (
    ADOPT_VALUES,
    AdoptedValue,
    AdoptValuesRequest,
    AdoptValuesResponse,
    ValueSuggestion,
)
from learning_memory.shared.errors import InsufficientDataError, NotFoundError, ValidationError
from learning_memory.shared.log import get_logger
from learning_memory.worker.jobs.learning import clustering, store_value
from learning_memory.worker.learning.cache import Clustering
from learning_memory.worker.learning.clusterer import Cluster, Verdict, judge
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Vector, VectorStore

log = get_logger(__name__)
READ_PAGE = 1_000


def _words(text: str) -> str:
    return " ".join(text.split()).casefold()


async def _stored(store: VectorStore) -> tuple[set[str], set[tuple[str, str]]]:
    """The ids of the values stored here, and their (axis, words): a suggestion that says what a
    value here says already is that value."""
    ids: set[str] = set()
    said: set[tuple[str, str]] = set()
    if not await store.collection_exists(VALUES_COLLECTION):
        return ids, said
    offset = 0
    while True:
        page = await store.scroll(
            VALUES_COLLECTION, limit=READ_PAGE, offset=offset, payload_fields=("axis", "text")
        )
        offset += len(page)
        for record in page:
            ids.add(record.id)
            said.add((str(record.payload.get("axis")), _words(str(record.payload.get("text", "")))))
        if len(page) < READ_PAGE:
            return ids, said


def _nearest(found: Clustering, vector: Vector, k: float) -> tuple[Cluster, Verdict] | None:
    """The nearest cluster that takes the vector, else the nearest one; None with no clusters."""
    verdicts = [(cluster, judge(cluster, vector, k)) for cluster in found.clusters]
    if not verdicts:
        return None
    taking = [pair for pair in verdicts if pair[1].valid]
    return min(taking or verdicts, key=lambda pair: pair[1].distance)


def _answer(suggestion: ValueSuggestion, outcome: str, **fields: object) -> AdoptedValue:
    return AdoptedValue(
        id=suggestion.id,
        text=suggestion.text,
        axis=suggestion.axis,
        outcome=outcome,
        **fields,
    )


async def _adopt(
    run: JobRun, suggestion: ValueSuggestion, vector: Vector, clusterings: dict[str, Clustering | str]
) -> AdoptedValue:
    if suggestion.axis not in clusterings:
        try:
            clusterings[suggestion.axis] = await clustering(run, suggestion.axis)
        except (NotFoundError, InsufficientDataError) as exc:
            clusterings[suggestion.axis] = exc.message
    found = clusterings[suggestion.axis]
    if isinstance(found, str):
        return _answer(suggestion, "rejected", reason=f"No clusters to validate it against here: {found}")
    k = run.services.settings.value_threshold_k
    nearest = _nearest(found, vector, k)
    if nearest is None:
        reason = f"Axis {suggestion.axis} has no clusters here (every experience is noise)"
        return _answer(suggestion, "rejected", reason=reason)
    cluster, verdict = nearest
    figures = {
        "cluster_id": cluster_id(suggestion.axis, cluster.label),
        "centroid_distance": round(verdict.distance, 6),
        "threshold_distance": round(verdict.threshold, 6),
    }
    if not verdict.valid:
        reason = (
            f"No cluster here takes it: the nearest, {figures['cluster_id']}, is at distance "
            f"{verdict.distance:.4f}, above its threshold {verdict.threshold:.4f} (mean + {k:g}·std)"
        )
        return _answer(suggestion, "rejected", reason=reason, **figures)
    request = StoreValueRequest(
        id=suggestion.id,
        text=suggestion.text,
        axis=suggestion.axis,
        label=cluster.label,
        created_at=suggestion.created_at,
    )
    try:
        await store_value(run, request)
    except ValidationError as exc:  # the axis was clustered again between the two looks
        return _answer(suggestion, "rejected", reason=exc.message, **figures)
    return _answer(suggestion, "stored", **figures)


@job(ADOPT_VALUES)
async def adopt_values(run: JobRun, request: AdoptValuesRequest) -> AdoptValuesResponse:
    if not request.suggestions:
        return AdoptValuesResponse(results=[])
    ids, said = await _stored(await run.services.vectors())
    vectors = await (await run.services.embedder()).embed([s.text for s in request.suggestions])
    clusterings: dict[str, Clustering | str] = {}
    results: list[AdoptedValue] = []
    for suggestion, vector in zip(request.suggestions, vectors, strict=True):
        words = (suggestion.axis, _words(suggestion.text))
        if suggestion.id in ids or words in said:
            results.append(_answer(suggestion, "present"))
            continue
        answer = await _adopt(run, suggestion, vector, clusterings)
        if answer.outcome == "stored":
            ids.add(suggestion.id)
            said.add(words)
        results.append(answer)
    counts = {o: sum(1 for r in results if r.outcome == o) for o in ("stored", "present", "rejected")}
    log.info("porting.values_adopted", **counts)
    return AdoptValuesResponse(results=results)
