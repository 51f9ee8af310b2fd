"""Records stored one after another in one session read in the light of their neighbours.

A memory is stored with its thread (the session that stored it) and its place in it
(``seq``). Said in a conversation, a memory often leans on the one before: "At first it was
scary, but I knew I had to make a change" answers "What made you leave your job?" only next to
the question it followed. Neither side of the search can find it by words it does not hold, so
a record lends part of its relevance to the records one and two places from it in its thread, as
a person recalls a note with the notes taken beside it. The first hits bring their neighbours
into the list (scored by meaning alone, as the keyword side did not find them). The prompt hook's
gate still asks each record's own cosine, so a neighbour is never injected for its neighbour's
sake.

Records without a thread (experiences, values, and memories stored before threads) are left as
they were, with no extra read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from learning_memory.worker.recall.hybrid import Candidate, Fusion, matches, rank
from learning_memory.worker.recall.timeframe import Period
from learning_memory.worker.vectors.base import Filter, MatchValue, Range, Vector, VectorStore

# The share of its best neighbour's relevance a record gains, one place away and two.
NEIGHBOUR_SHARES = (0.4, 0.2)
# The first hits whose neighbours are read into the list.
EXPANDED = 10


def place(payload: dict[str, Any]) -> tuple[str, int] | None:
    """A record's thread and its place in it, if it was stored in one."""
    thread, seq = payload.get("thread"), payload.get("seq")
    if isinstance(thread, str) and isinstance(seq, int) and not isinstance(seq, bool):
        return thread, seq
    return None


async def _neighbours(
    store: VectorStore, collection: str, hits: Sequence[Candidate], known: set[str], vector: Vector
) -> list[Candidate]:
    """The records within two places of ``hits`` in their threads that are not ``known``, with
    their cosine to the query."""
    reach = len(NEIGHBOUR_SHARES)
    query = np.asarray(vector, dtype=np.float32)
    query_norm = float(np.linalg.norm(query)) or 1.0
    found: list[Candidate] = []
    for hit in hits:
        where = place(hit.payload)
        if where is None:
            continue
        thread, seq = where
        window = Filter((MatchValue("thread", thread), Range("seq", gte=seq - reach, lte=seq + reach)))
        for record in await store.scroll(collection, limit=2 * reach + 1, filter=window, with_vectors=True):
            if record.id in known or record.vector is None:
                continue
            known.add(record.id)
            row = np.asarray(record.vector, dtype=np.float32)
            cosine = float(row @ query / ((float(np.linalg.norm(row)) or 1.0) * query_norm))
            found.append(Candidate(record.id, record.payload, cosine))
    return found


async def in_context(
    store: VectorStore,
    collection: str,
    ranked: list[Candidate],
    vector: Vector,
    *,
    where: Filter | None,
    fusion: Fusion,
    period: Period | None,
    adjust: Callable[[dict[str, Any]], float] | None,
    keep: Callable[[dict[str, Any]], bool],
) -> list[Candidate]:
    """``ranked`` with the neighbours of its first hits, each record's score raised by its
    neighbours' relevance, best first. ``keep``: whether a record may be listed at all."""
    first = [hit for hit in ranked[:EXPANDED] if place(hit.payload) is not None]
    if not first:
        return ranked
    known = {hit.id for hit in ranked}
    fetched = await _neighbours(store, collection, first, known, vector)
    brought = rank(fetched, fusion=fusion, period=period, adjust=adjust)
    brought_ids = {hit.id for hit in brought}
    everyone = [*ranked, *brought]
    relevance: dict[tuple[str, int], float] = {}
    for hit in everyone:
        at = place(hit.payload)
        if at is not None:
            relevance[at] = hit.score
    raised: list[Candidate] = []
    for hit in everyone:
        if hit.id in brought_ids and not (matches(where, hit.payload) and keep(hit.payload)):
            continue  # lends its relevance, but the caller's filter leaves it out
        at = place(hit.payload)
        score = hit.score
        if at is not None:
            thread, seq = at
            for distance, share in enumerate(NEIGHBOUR_SHARES, start=1):
                before = relevance.get((thread, seq - distance), 0.0)
                score += share * max(before, relevance.get((thread, seq + distance), 0.0))
        raised.append(replace(hit, score=score))
    raised.sort(key=lambda c: (c.score, c.cosine), reverse=True)
    for hit in raised:
        hit.score = min(hit.score, 1.0)
    return raised
