"""BM25 over one collection's keyword rows, held in the worker's memory.

SQLite's FTS5 scored every row holding any of a query's words, one auxiliary-function call a
row: in a large store a prompt's common words match a good share of the experiences, and the
keyword side cost most of the prompt hook. Here the postings sit in numpy arrays and a query scores the rows
of its words in a few vector operations. The ranking is FTS5's: its ``porter unicode61``
tokens (Snowball's Porter stemmer, the same algorithm), its BM25 (k1 1.2, b 0.75, an IDF at or
below zero taken as 1e-6), its document count and average length.

``recall_rows`` stays the truth; an index is what was read from it. Every insert into or delete
from it is appended to ``recall_log`` by triggers, so an index catches up with any process's
writes by reading the log past the last entry it applied. Where the log was pruned past that
point, the index is read again whole.

Postings live in two parts: the compressed one (every term's rows in one sorted array) and the
rows added since, per term; they are merged when the added part grows, and rows deleted leave
holes (a mask) until then.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import unicodedata
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import Stemmer

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# Log entries kept past the newest: an index further behind than this is read again whole.
LOG_KEPT = 100_000
# The added part is merged into the compressed one once it holds this share of its postings.
MERGE_SHARE = 0.25
MERGE_MIN = 20_000

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_stemmer = threading.local()

Ints = npt.NDArray[np.int64]


class Found(NamedTuple):
    """A search's answer: (point, BM25) best first; the sum of the query's IDFs (what a row
    holding each of its words once would score); and, per point found, the sum of the IDFs of
    the query's words it holds, each counted once however often the row repeats it."""

    hits: list[tuple[str, float]]
    best: float
    held: dict[str, float]


def _stem(words: list[str]) -> list[str]:
    stemmer = getattr(_stemmer, "porter", None)
    if stemmer is None:  # a Stemmer is not safe to share between threads
        stemmer = _stemmer.porter = Stemmer.Stemmer("porter")
    stems: list[str] = stemmer.stemWords(words)
    return stems


def _plain(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    # unicode61's remove_diacritics: "café" is found by "cafe".
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """The index terms of ``text``, in order, repeats kept."""
    return _stem(_WORD.findall(_plain(text)))


class Index:
    """One collection's postings. Not thread-safe: the metadata store runs reads one at a time
    on its reader thread, and ``lock`` guards against any other caller."""

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self.lock = threading.Lock()
        self.seen = -1  # the last log entry applied; -1: never read
        self._reset()

    def _reset(self) -> None:
        self.vocab: dict[str, int] = {}
        self.points: list[str] = []  # per slot
        self.slot_of: dict[int, int] = {}  # recall_rows.id: slot, for the living
        self.lengths = np.zeros(0, np.float64)  # tokens per slot
        self.alive = np.zeros(0, bool)
        self.row_ids = np.zeros(0, np.int64)
        self.starts = np.zeros(1, np.int64)  # term t's postings: [starts[t], starts[t + 1])
        self.docs = np.zeros(0, np.int32)
        self.freqs = np.zeros(0, np.uint16)
        self.added: dict[int, list[int]] = {}  # term: slot << 16 | frequency, since the merge
        self.added_count = 0
        self.living = 0
        self.total_length = 0.0

    # -- keeping up with recall_rows ---------------------------------------------------------

    def catch_up(self, conn: sqlite3.Connection) -> None:
        (newest,) = conn.execute("SELECT coalesce(max(seq), 0) FROM recall_log").fetchone()
        if newest == self.seen:
            return
        (oldest,) = conn.execute("SELECT coalesce(min(seq), 0) FROM recall_log").fetchone()
        # Never read, the log pruned past this index, or a store started afresh under it.
        if self.seen < 0 or oldest > self.seen + 1 or newest < self.seen:
            self._read_whole(conn, newest)
            return
        changes = conn.execute(
            "SELECT l.row_id, l.added, r.point_id, r.text FROM recall_log AS l"
            " LEFT JOIN recall_rows AS r ON r.id = l.row_id AND l.added = 1"
            " WHERE l.seq > ? AND l.seq <= ? AND l.collection = ? ORDER BY l.seq",
            (self.seen, newest, self.collection),
        ).fetchall()
        for row_id, added, point, text in changes:
            if not added:
                self._remove(row_id)
            elif text is not None and row_id not in self.slot_of:
                self._add(row_id, point, text)
        self.seen = newest
        if self.added_count > max(MERGE_MIN, MERGE_SHARE * len(self.docs)) or (
            len(self.points) - self.living > max(1_000, self.living // 4)
        ):
            self._merge()

    def _read_whole(self, conn: sqlite3.Connection, newest: int) -> None:
        # The log's position first: a write landing while the rows are read is applied again
        # from the log, which changes nothing (rows are added by id, once).
        self._reset()
        rows = conn.execute(
            "SELECT id, point_id, text FROM recall_rows WHERE collection = ? ORDER BY id",
            (self.collection,),
        ).fetchall()
        raw: dict[str, int] = {}
        counts = np.zeros(len(rows), np.int64)
        words: list[str] = []
        for slot, (row_id, point, text) in enumerate(rows):
            found = _WORD.findall(_plain(text))
            counts[slot] = len(found)
            words += found
            self.points.append(str(point))
            self.slot_of[int(row_id)] = slot
        # Stemmed once per distinct word, not once per occurrence.
        ids = np.fromiter((raw.setdefault(w, len(raw)) for w in words), np.int64, len(words))
        stems = np.fromiter(
            (self.vocab.setdefault(s, len(self.vocab)) for s in _stem(list(raw))), np.int64, len(raw)
        )
        slots = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        self.lengths = counts.astype(np.float64)
        self.alive = np.ones(len(rows), bool)
        self.row_ids = np.fromiter((int(r[0]) for r in rows), np.int64, len(rows))
        self.living, self.total_length = len(rows), float(counts.sum())
        self._compress(stems[ids] if len(words) else np.zeros(0, np.int64), slots)
        self.seen = newest

    def _compress(self, terms: Ints, slots: Ints, freqs: Ints | None = None) -> None:
        """The compressed part from (term, slot) pairs, repeated once per occurrence unless
        ``freqs`` gives each pair's count."""
        keys = (terms << 32) | slots
        if freqs is None:
            keys, counts = np.unique(keys, return_counts=True)
        else:
            order = np.argsort(keys, kind="stable")
            keys, counts = keys[order], freqs[order]
        self.docs = (keys & 0xFFFFFFFF).astype(np.int32)
        self.freqs = np.minimum(counts, 0xFFFF).astype(np.uint16)
        self.starts = np.searchsorted(keys >> 32, np.arange(len(self.vocab) + 1)).astype(np.int64)
        self.added, self.added_count = {}, 0

    def _add(self, row_id: int, point: str, text: str) -> None:
        slot = len(self.points)
        terms = tokens(text)
        self.points.append(str(point))
        self.slot_of[row_id] = slot
        self.lengths = np.append(self.lengths, float(len(terms)))
        self.alive = np.append(self.alive, True)
        self.row_ids = np.append(self.row_ids, row_id)
        self.living += 1
        self.total_length += len(terms)
        counts: dict[int, int] = {}
        for term in terms:
            t = self.vocab.setdefault(term, len(self.vocab))
            counts[t] = counts.get(t, 0) + 1
        for t, n in counts.items():
            self.added.setdefault(t, []).append(slot << 16 | min(n, 0xFFFF))
        self.added_count += len(counts)

    def _remove(self, row_id: int) -> None:
        slot = self.slot_of.pop(row_id, None)
        if slot is None:
            return
        self.alive[slot] = False
        self.living -= 1
        self.total_length -= float(self.lengths[slot])

    def _merge(self) -> None:
        """Both parts into one compressed part, the holes left by deletes closed."""
        per_term = np.diff(self.starts)
        terms = [np.repeat(np.arange(len(per_term), dtype=np.int64), per_term)]
        slots, freqs = [self.docs.astype(np.int64)], [self.freqs.astype(np.int64)]
        for t, packed in self.added.items():
            array = np.asarray(packed, np.int64)
            terms.append(np.full(len(array), t, np.int64))
            slots.append(array >> 16)
            freqs.append(array & 0xFFFF)
        all_terms, all_slots, all_freqs = np.concatenate(terms), np.concatenate(slots), np.concatenate(freqs)
        keep = self.alive[all_slots]
        renumber = np.cumsum(self.alive) - 1
        self.points = [p for p, living in zip(self.points, self.alive, strict=True) if living]
        self.lengths, self.row_ids = self.lengths[self.alive], self.row_ids[self.alive]
        self.slot_of = {int(r): s for s, r in enumerate(self.row_ids)}
        self.alive = np.ones(len(self.points), bool)
        self._compress(all_terms[keep], renumber[all_slots[keep]], all_freqs[keep])

    # -- searching ---------------------------------------------------------------------------

    def _postings(self, term: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        # A term first met after the last merge has no compressed postings.
        start, end = (self.starts[term], self.starts[term + 1]) if term + 1 < len(self.starts) else (0, 0)
        slots, freqs = self.docs[start:end], self.freqs[start:end]
        added = self.added.get(term)
        if added:
            array = np.asarray(added, np.int64)
            slots = np.concatenate([slots, (array >> 16).astype(np.int32)])
            freqs = np.concatenate([freqs, (array & 0xFFFF).astype(np.uint16)])
        living = self.alive[slots]
        return slots[living], freqs[living].astype(np.float64)

    def search(self, words: Sequence[str], limit: int) -> Found:
        """The ``limit`` best rows for ``words``."""
        documents = self.living
        scores = np.zeros(len(self.points), np.float64)
        held = np.zeros(len(self.points), np.float64)
        average = self.total_length / documents if documents else 1.0
        best = 0.0
        for word in words:
            # As FTS5 reads a quoted word: its tokens, each a term the rows must hold.
            for term in tokens(word):
                t = self.vocab.get(term)
                slots, freqs = self._postings(t) if t is not None else (np.zeros(0, np.int32), None)
                idf = max(math.log((documents - len(slots) + 0.5) / (len(slots) + 0.5)), MIN_IDF)
                best += idf
                if freqs is not None and len(slots):
                    norm = K1 * (1 - B + B * self.lengths[slots] / average)
                    scores[slots] += idf * freqs * (K1 + 1) / (freqs + norm)
                    held[slots] += idf
        matched = np.flatnonzero(scores)
        if not len(matched) or limit <= 0:
            return Found([], best, {})
        if len(matched) > limit:
            bar = np.partition(scores[matched], len(matched) - limit)[len(matched) - limit]
            matched = matched[scores[matched] >= bar]  # ties at the bar kept, then ordered
        order = np.lexsort((self.row_ids[matched], -scores[matched]))[:limit]
        chosen = matched[order]
        return Found(
            [(self.points[s], float(scores[s])) for s in chosen],
            best,
            {self.points[s]: float(held[s]) for s in chosen},
        )


# One index per collection per metadata store: a store closed and dropped takes its indexes.
_indexes: weakref.WeakKeyDictionary[object, dict[str, Index]] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def index_for(owner: object, collection: str) -> Index:
    with _indexes_lock:
        mine = _indexes.setdefault(owner, {})
        if collection not in mine:
            mine[collection] = Index(collection)
        return mine[collection]


def prune_log(conn: sqlite3.Connection) -> None:
    """Drop log entries every index is likely past; one further behind reads its rows again."""
    conn.execute("DELETE FROM recall_log WHERE seq <= (SELECT max(seq) FROM recall_log) - ?", (LOG_KEPT,))
