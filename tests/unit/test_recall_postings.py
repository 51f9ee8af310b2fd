"""The keyword side's index in memory: FTS5's BM25 exactly, and catching up with every change of
the rows, whoever wrote them."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from learning_memory.worker.metadata.migrations import MIGRATIONS, split_statements
from learning_memory.worker.recall import keywords, postings
from learning_memory.worker.recall.postings import Index

WORDS = (
    "deploy fly heroku redis database fixture pytest failing timeout partner loader nightly etl "
    "billing client retries session login refresh cache eviction memory leak config option café "
    "migrations schema rollback worktree commit green red flaky test tests testing"
).split()


def _texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 14))) for _ in range(count)]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "m.sqlite3", isolation_level=None)
    for script in MIGRATIONS:
        for statement in split_statements(script):
            conn.execute(statement)
    yield conn
    conn.close()


def _put(conn: sqlite3.Connection, collection: str, rows: list[tuple[str, str]]) -> None:
    conn.executemany(
        "DELETE FROM recall_rows WHERE collection = ? AND point_id = ?", [(collection, p) for p, _ in rows]
    )
    conn.executemany(
        "INSERT INTO recall_rows (collection, point_id, text) VALUES (?, ?, ?)",
        [(collection, p, t) for p, t in rows],
    )


def _fts5(conn: sqlite3.Connection, words: list[str], limit: int) -> list[tuple[str, float]]:
    """What migration 11's FTS5 index answered for the same rows."""
    conn.execute("DROP TABLE IF EXISTS fts")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='porter unicode61')")
    conn.execute(
        "INSERT INTO fts (rowid, text) SELECT id, text FROM recall_rows WHERE collection = 'memories'"
    )
    match = " OR ".join(f'"{w}"' for w in words)
    found = conn.execute(
        "SELECT r.point_id, -bm25(fts) FROM fts JOIN recall_rows AS r ON r.id = fts.rowid"
        " WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
        (match, limit),
    ).fetchall()
    return [(str(p), float(s)) for p, s in found]


def _search(index: Index, conn: sqlite3.Connection, words: list[str], limit: int) -> list[tuple[str, float]]:
    index.catch_up(conn)
    return index.search(words, limit)[0]


def test_scores_are_fts5s(conn: sqlite3.Connection) -> None:
    _put(conn, "memories", [(f"p{i}", text) for i, text in enumerate(_texts(400))])
    index = Index("memories")
    for query in ("failing pytest fixtures", "cafe deploys to fly", "commit", "leaks in the cache"):
        words = keywords.terms(query)
        mine, theirs = _search(index, conn, words, 400), _fts5(conn, words, 400)
        assert {p: round(s, 4) for p, s in mine} == {p: round(s, 4) for p, s in theirs}
        assert [round(s, 4) for _, s in mine] == sorted((round(s, 4) for _, s in mine), reverse=True)


def test_the_best_possible_score_sums_each_words_idf(conn: sqlite3.Connection) -> None:
    _put(conn, "memories", [("a", "deploy to fly"), ("b", "redis database"), ("c", "pytest fixture")])
    index = Index("memories")
    index.catch_up(conn)
    hits, best, _ = index.search(["deploy", "unheard"], 5)
    assert [p for p, _ in hits] == ["a"]
    assert 0 < hits[0][1] < best  # the unheard word counts: "a" matches half the query


def test_a_repeated_word_scores_higher_but_is_held_once(conn: sqlite3.Connection) -> None:
    texts = [("once", "a version of the deploy"), ("thrice", "version version version of the deploy")]
    _put(conn, "memories", [*texts, ("other", "redis database"), ("more", "pytest fixture")])
    index = Index("memories")
    index.catch_up(conn)
    found = index.search(["version", "notes"], 5)
    scores = dict(found.hits)
    assert scores["thrice"] > scores["once"]
    assert found.held["thrice"] == found.held["once"] < found.best  # "notes" is held by neither


def test_ties_keep_the_older_row_first_and_the_limit(conn: sqlite3.Connection) -> None:
    _put(conn, "memories", [(f"p{i}", "same words here") for i in range(6)])
    index = Index("memories")
    assert [p for p, _ in _search(index, conn, ["words"], 3)] == ["p0", "p1", "p2"]
    assert _search(index, conn, ["words"], 0) == []
    assert _search(index, conn, ["absent"], 3) == []


def test_an_index_catches_up_with_writes_and_deletes(conn: sqlite3.Connection) -> None:
    texts = _texts(300, seed=3)
    _put(conn, "memories", [(f"p{i}", t) for i, t in enumerate(texts[:200])])
    index, fresh_words = Index("memories"), keywords.terms("flaky worktree rollback")
    _search(index, conn, fresh_words, 10)
    # Added, replaced (a retried job), deleted, and another collection's rows, after the index read.
    _put(conn, "memories", [(f"p{i}", t) for i, t in enumerate(texts[200:], start=200)])
    _put(conn, "memories", [("p3", "a rewritten note about a flaky worktree")])
    conn.execute("DELETE FROM recall_rows WHERE point_id IN ('p4', 'p250')")
    _put(conn, "values", [("v1", "flaky worktree rollback")])
    for query in ("flaky worktree rollback", "nightly etl partner", "a rewritten note"):
        words = keywords.terms(query)
        mine, theirs = _search(index, conn, words, 50), _fts5(conn, words, 50)
        assert {p: round(s, 4) for p, s in mine} == {p: round(s, 4) for p, s in theirs}
    assert index.added and not index.alive.all()  # not merged yet: the added part and a hole


def test_merging_keeps_the_answers(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings, "MERGE_MIN", 10)
    _put(conn, "memories", [(f"p{i}", t) for i, t in enumerate(_texts(50))])
    index = Index("memories")
    _search(index, conn, ["deploy"], 5)
    _put(conn, "memories", [(f"q{i}", t) for i, t in enumerate(_texts(60, seed=9))])
    conn.execute("DELETE FROM recall_rows WHERE point_id LIKE 'p1%'")
    words = keywords.terms("deploy fly heroku café")
    mine = _search(index, conn, words, 200)
    assert not index.added and index.alive.all() and len(index.points) == index.living
    assert {p: round(s, 4) for p, s in mine} == {p: round(s, 4) for p, s in _fts5(conn, words, 200)}


def test_a_pruned_log_or_a_new_store_reads_the_rows_again(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "LOG_KEPT", 5)
    _put(conn, "memories", [("a", "deploy to fly")])
    index = Index("memories")
    assert [p for p, _ in _search(index, conn, ["deploy"], 5)] == ["a"]
    _put(conn, "memories", [(f"n{i}", "deploy again") for i in range(20)])
    postings.prune_log(conn)
    assert len(_search(index, conn, ["deploy"], 50)) == 21
    # The log emptied under it (a store started afresh).
    conn.execute("DELETE FROM recall_rows")
    conn.execute("DELETE FROM recall_log")
    _put(conn, "memories", [("z", "deploy anew")])
    assert [p for p, _ in _search(index, conn, ["deploy"], 50)] == ["z"]


def test_an_empty_collection_answers_nothing(conn: sqlite3.Connection) -> None:
    index = Index("memories")
    index.catch_up(conn)
    assert index.search(["deploy"], 5)[0] == []


def test_tokens_are_fts5s_porter_unicode61() -> None:
    assert postings.tokens("Failing tests, FIXTURES and café_au_lait!") == [
        "fail",
        "test",
        "fixtur",
        "and",
        "cafe",
        "au",
        "lait",
    ]
