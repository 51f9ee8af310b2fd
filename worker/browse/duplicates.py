"""Near-duplicate records of one collection, found by the vector store's own search.

Each of the newest ``scan_limit`` records asks the store for its few nearest neighbours (under
the same filter); pairs at or above the similarity bar are joined into groups (connected
components). The work is one indexed search per record scanned, never all pairs: a store
larger than the scan has its oldest records looked at only as someone's neighbour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from learning_memory.shared.contracts.browse import AuditItem, DuplicateGroup, DuplicateList, DuplicatePair
from learning_memory.worker.recall.search import set_aside
from learning_memory.worker.vectors.base import Filter, Record, VectorStore

NEIGHBOURS = 5  # per record: a group larger than this is still joined through its members
SCAN_PAGE = 200  # records read with their vectors at a time


@dataclass(frozen=True)
class Pairs:
    similar: dict[tuple[str, str], float]  # (a, b) with a < b: their cosine similarity
    scanned: int
    records: int


async def similar_pairs(
    store: VectorStore, collection: str, where: Filter, bar: float, scan_limit: int
) -> Pairs:
    """The pairs of points at or above ``bar``, among the neighbours of the newest ``scan_limit``."""
    if not await store.collection_exists(collection):
        return Pairs({}, 0, 0)
    records = await store.count(collection, where)
    similar: dict[tuple[str, str], float] = {}
    scanned = 0
    while scanned < min(scan_limit, records):
        page = await store.scroll(
            collection,
            limit=min(SCAN_PAGE, scan_limit - scanned),
            offset=scanned,
            filter=where,
            order_by="created_ts",
            with_vectors=True,
            payload_fields=(),
        )
        if not page:
            break
        scanned += len(page)
        for record in page:
            if record.vector is None:
                continue
            hits = await store.search(
                collection, record.vector, limit=NEIGHBOURS + 1, filter=where, with_payload=False
            )
            for hit in hits:
                if hit.id != record.id and hit.score >= bar:
                    key = (min(record.id, hit.id), max(record.id, hit.id))
                    similar[key] = max(similar.get(key, 0.0), round(float(hit.score), 6))
    return Pairs(similar, scanned, records)


def groups(similar: dict[tuple[str, str], float]) -> list[list[str]]:
    """Connected components of the pairs, each sorted, most similar pair first."""
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in similar:
        parent[root(a)] = root(b)
    members: dict[str, list[str]] = {}
    for node in parent:
        members.setdefault(root(node), []).append(node)
    best: dict[str, float] = {}
    for (a, _), score in similar.items():
        best[root(a)] = max(best.get(root(a), 0.0), score)
    return [sorted(nodes) for r, nodes in sorted(members.items(), key=lambda m: (-best[m[0]], min(m[1])))]


async def duplicate_list(
    store: VectorStore,
    collection: str,
    where: Filter,
    bar: float,
    scan_limit: int,
    limit: int,
    item: Callable[[Record], AuditItem],
) -> DuplicateList:
    """The groups of near-duplicates, most similar first, each record shown by ``item``."""
    pairs = await similar_pairs(store, collection, where, bar, scan_limit)
    paired = sorted({point for pair in pairs.similar for point in pair})
    records = {record.id: record for record in await store.get(collection, paired)} if paired else {}
    # Those a person set aside (a value retired, an experience marked wrong) are dealt with; one
    # deleted while we looked is gone.
    kept = {point for point, record in records.items() if not set_aside(record.payload)}
    similar = {pair: score for pair, score in pairs.similar.items() if pair[0] in kept and pair[1] in kept}
    found = groups(similar)
    chosen = found[:limit]
    listed = []
    for group in chosen:
        items = {point: item(records[point]) for point in group}
        inside = sorted(
            ((a, b, score) for (a, b), score in similar.items() if a in items and b in items),
            key=lambda pair: (-pair[2], pair[0], pair[1]),
        )
        listed.append(
            DuplicateGroup(
                items=sorted(items.values(), key=lambda i: (i.created_at is None, i.created_at, i.id)),
                pairs=[DuplicatePair(a=items[a].id, b=items[b].id, similarity=s) for a, b, s in inside],
                similarity=inside[0][2],
            )
        )
    return DuplicateList(groups=listed, total=len(found), scanned=pairs.scanned, records=pairs.records)
