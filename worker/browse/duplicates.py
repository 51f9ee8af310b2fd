"""Near-duplicate records of one collection, found by the vector store's own search.

Each of the newest ``scan_limit`` records asks the store for its few nearest neighbours (under
the same filter); pairs at or above the similarity bar are joined into groups (connected
components). The work is one indexed search per record scanned, never all pairs: a store
larger than the scan has its oldest records looked at only as someone's neighbour.

A record's neighbours are kept between audits (:class:`Looked`, per data folder, collection and
filter): the store changes by a few records between two looks, and only those are searched again
(new ones, and ones whose vector changed). A kept neighbour list may miss a record added or
deleted since; the new record's own search finds it, and every list is searched afresh after
``LOOKED_MAX_AGE_S``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from learning_memory.shared.contracts.browse import AuditItem, DuplicateGroup, DuplicateList, DuplicatePair
from learning_memory.worker.lru import Recent
from learning_memory.worker.recall.search import set_aside
from learning_memory.worker.vectors.base import Filter, Record, VectorStore

NEIGHBOURS = 5  # per record: a group larger than this is still joined through its members
SCAN_PAGE = 200  # records read with their vectors at a time
LOOKED_MAX_AGE_S = 1800.0
LOOKED_KEPT = 8  # scans kept (data folder, collection, filter), the least recently used dropped


@dataclass(frozen=True)
class Pairs:
    similar: dict[tuple[str, str], float]  # (a, b) with a < b: their cosine similarity
    scanned: int
    records: int


@dataclass
class Looked:
    """The neighbours each record of one scan was found to have, and for which vector."""

    started: float = field(default_factory=time.monotonic)
    neighbours: dict[str, tuple[int, tuple[tuple[str, float], ...]]] = field(default_factory=dict)


_LOOKED: Recent[tuple[str, str, Filter], Looked] = Recent(LOOKED_KEPT)


def looked(place: str, collection: str, where: Filter) -> Looked:
    """The neighbours kept from the last scan of ``collection`` under ``where`` in the data folder
    ``place``; a fresh (empty) one when there was none lately."""
    key = (place, collection, where)
    found = _LOOKED.get(key)
    if found is None or time.monotonic() - found.started > LOOKED_MAX_AGE_S:
        found = Looked()
        _LOOKED.put(key, found)
    return found


async def similar_pairs(
    store: VectorStore,
    collection: str,
    where: Filter,
    bar: float,
    scan_limit: int,
    kept: Looked | None = None,
) -> Pairs:
    """The pairs of points at or above ``bar``, among the neighbours of the newest ``scan_limit``;
    with ``kept``, the neighbours of a record whose vector is as it was are not searched again
    (``kept`` is then left holding this scan's)."""
    if not await store.collection_exists(collection):
        return Pairs({}, 0, 0)
    kept = kept or Looked()
    before, kept.neighbours = kept.neighbours, {}
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
            vector_key = hash(tuple(record.vector))
            known = before.get(record.id)
            if known is not None and known[0] == vector_key:
                hits = known[1]
            else:
                found = await store.search(
                    collection, record.vector, limit=NEIGHBOURS + 1, filter=where, with_payload=False
                )
                hits = tuple((hit.id, round(float(hit.score), 6)) for hit in found)
            kept.neighbours[record.id] = (vector_key, hits)
            for other, score in hits:
                if other != record.id and score >= bar:
                    key = (min(record.id, other), max(record.id, other))
                    similar[key] = max(similar.get(key, 0.0), score)
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
    looked_before: Looked | None = None,
) -> DuplicateList:
    """The groups of near-duplicates, most similar first, each record shown by ``item``."""
    pairs = await similar_pairs(store, collection, where, bar, scan_limit, looked_before)
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
