"""The keyword side's rows: one per memory, value and experience point, in the worker's SQLite
(``recall_rows``; every change logged in ``recall_log`` by triggers, migration 12).

Writes replace a point's row (a retried job writes the same row again). A search ranks one
collection's rows holding any of the query's words by BM25 (``worker.recall.postings``, an
index in memory that catches up with the log first); the caller applies its filters to what
comes back.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from learning_memory.shared.contracts.experiences import collection_for
from learning_memory.shared.contracts.learning import VALUES_COLLECTION
from learning_memory.shared.contracts.memory import COLLECTION as MEMORIES
from learning_memory.shared.errors import LmsError
from learning_memory.shared.log import get_logger
from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.recall import postings
from learning_memory.worker.recall.texts import COLLECTIONS

log = get_logger(__name__)
# What the prompt hook and the SessionStart brief rank: read into memory when a worker starts.
HOOK_COLLECTIONS = (collection_for("full"), VALUES_COLLECTION, MEMORIES)
# Words that carry no meaning of their own in a question or a note: matching them only adds noise.
STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can could
    did do does doing done for from had has have having he her here hers him his how i if in into
    is it its just me my no nor not of off on once only or our out over own she should so some such
    than that the their them then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours""".split()
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def terms(text: str) -> list[str]:
    """The words of ``text`` a keyword search looks for: lower-cased, no stopwords, each once."""
    words = (word.lower() for word in _WORD.findall(text))
    return list(dict.fromkeys(word for word in words if word not in STOPWORDS))


def known(collection: str) -> str:
    if collection not in COLLECTIONS:
        raise ValueError(f"No keyword index for collection {collection!r}")
    return collection


async def put(metadata: MetadataStore, collection: str, rows: Sequence[tuple[str, str]]) -> None:
    """Write (point id, text) rows of ``collection``, replacing what those points had."""
    known(collection)
    if not rows:
        return

    def write(conn: sqlite3.Connection) -> None:
        conn.executemany(
            "DELETE FROM recall_rows WHERE collection = ? AND point_id = ?",
            [(collection, point) for point, _ in rows],
        )
        conn.executemany(
            "INSERT INTO recall_rows (collection, point_id, text) VALUES (?, ?, ?)",
            [(collection, point, text) for point, text in rows],
        )
        postings.prune_log(conn)

    await metadata.transaction(write)


async def drop(metadata: MetadataStore, collection: str, ids: Iterable[str]) -> None:
    known(collection)
    doomed = [(collection, point) for point in ids]

    def write(conn: sqlite3.Connection) -> None:
        conn.executemany("DELETE FROM recall_rows WHERE collection = ? AND point_id = ?", doomed)
        postings.prune_log(conn)

    if doomed:
        await metadata.transaction(write)


async def point_ids(metadata: MetadataStore, collection: str) -> set[str]:
    found = await metadata.fetchall("SELECT point_id FROM recall_rows WHERE collection = ?", (collection,))
    return {str(row[0]) for row in found}


async def count(metadata: MetadataStore, collection: str) -> int:
    row = await metadata.fetchone("SELECT count(*) FROM recall_rows WHERE collection = ?", (collection,))
    return int(row[0]) if row is not None else 0


@dataclass(frozen=True)
class Matches:
    """A keyword search's answer: (point id, BM25 score) best first, higher better; and what a
    record holding every known word of the query once would score (the sum of their IDFs), so
    that ``score / best_possible`` tells how much of the query a record matches, in [0, 1].
    ``held`` has, per point, the IDFs of the query's words it holds, each counted once."""

    hits: list[tuple[str, float]]
    best_possible: float
    held: dict[str, float] = field(default_factory=dict)

    def strength(self, score: float) -> float:
        return min(score / self.best_possible, 1.0) if self.best_possible > 0 else 0.0

    def share_held(self, point: str) -> float:
        """The share of the query's word weight ``point`` holds, a repeated word counting once:
        how much of the query the record holds, where ``strength`` is also how much it is about it."""
        return self.strength(self.held.get(point, 0.0))


NO_MATCHES = Matches([], 0.0)


async def search(metadata: MetadataStore, collection: str, words: Sequence[str], limit: int) -> Matches:
    """The best matches for ``words`` in ``collection``."""
    index = postings.index_for(metadata, known(collection))
    if not words or limit <= 0:
        return NO_MATCHES

    def run(conn: sqlite3.Connection) -> Matches:
        with index.lock:
            index.catch_up(conn)
            found = index.search(words, limit)
        return Matches(found.hits, found.best, found.held) if found.hits else NO_MATCHES

    return await metadata.read(run)


async def warm(metadata: MetadataStore, collections: Sequence[str] = HOOK_COLLECTIONS) -> None:
    """Read ``collections``' indexes into memory ahead of their first search."""
    for collection in collections:
        index = postings.index_for(metadata, known(collection))

        def read(conn: sqlite3.Connection, index: postings.Index = index) -> None:
            with index.lock:
                index.catch_up(conn)

        try:
            await metadata.read(read)
        except (LmsError, sqlite3.Error) as exc:  # the first search reads it instead
            log.warning("recall.warm_up_failed", collection=collection, error=str(exc))
            return
