"""Records stored one after another in one session read in the light of their neighbours.

A memory is stored with its thread (the session that stored it) and its place in it
(``seq``). Said in a conversation, a memory often leans on the one before: "At first it was
scary, but I knew I had to make a change" answers "What made you leave your job?" only next to
the question it followed. Neither side of the search can find it by words it does not hold, so
a record lends part of its relevance to the records one and two places from it in its thread, as
a person recalls a note with the notes taken beside it. The first hits bring their neighbours
into the list (scored by meaning alone, as the keyword side did not find them). The prompt hook
does not read threads (``recall(threads=False)``): it speaks only of what bears on the prompt on
its own.

Records without a thread (experiences, values, and memories stored before threads) are left as
they were, with no extra read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from learning_memory.worker.recall.hybrid import Candidate, Fusion, cosine, matches, rank
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


def _windows(hits: Sequence[Candidate]) -> list[tuple[str, int, int]]:
    """The places within reach of ``hits``, as (thread, first, last) ranges: overlapping ranges of
    one thread merged, so that hits next to each other read their thread once."""
    reach = len(NEIGHBOUR_SHARES)
    spans = sorted((at[0], at[1] - reach, at[1] + reach) for hit in hits if (at := place(hit.payload)))
    merged: list[tuple[str, int, int]] = []
    for thread, first, last in spans:
        if merged and merged[-1][0] == thread and first <= merged[-1][2] + 1:
            merged[-1] = (thread, merged[-1][1], max(merged[-1][2], last))
        else:
            merged.append((thread, first, last))
    return merged


async def _neighbours(
    store: VectorStore, collection: str, hits: Sequence[Candidate], known: set[str], vector: Vector
) -> list[Candidate]:
    """The records within reach of ``hits`` in their threads that are not ``known``, with their
    cosine to the query."""
    found: list[Candidate] = []
    for thread, first, last in _windows(hits):
        window = Filter((MatchValue("thread", thread), Range("seq", gte=first, lte=last)))
        records = await store.scroll(collection, limit=last - first + 1, filter=window, with_vectors=True)
        for record in records:
            if record.id not in known and record.vector is not None:
                known.add(record.id)
                found.append(Candidate(record.id, record.payload, cosine(record.vector, vector)))
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
