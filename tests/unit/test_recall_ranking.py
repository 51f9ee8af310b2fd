"""How recall ranks: both sides fused on one scale, filters kept, stored questions below
statements, a named period preferred, and the periods a query can name."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from learning_memory.shared.contracts.memory import COLLECTION
from learning_memory.worker.recall.hybrid import Candidate, matches, rank
from learning_memory.worker.recall.names import held, names_in
from learning_memory.worker.recall.search import collapse, query_vector, recall
from learning_memory.worker.recall.timeframe import Event, Period, event_in, period_in
from learning_memory.worker.vectors.base import CollectionSpec, Filter, MatchAny, MatchValue, PointData, Range
from tests.helpers import job_run

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
TOPICS = (
    "billing cron job",
    "flaky login test",
    "redis database numbers",
    "release checklist",
    "code review rules",
    "logging format",
    "feature flags",
    "css build",
)


def _day(period: Period | None) -> tuple[str, str]:
    assert period is not None
    return period.start.date().isoformat(), period.end.date().isoformat()


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did we decide yesterday", "2026-11-25", "2026-11-28"),
        ("the cache bug from last week", "2026-11-12", "2026-11-24"),
        ("notes from in March", "2026-02-28", "2026-04-02"),
        ("what happened in March 2025", "2025-02-28", "2025-04-02"),
        ("on 8 May, 2023 we shipped", "2023-05-07", "2023-05-10"),
        ("around May 8th", "2026-05-07", "2026-05-10"),
        ("the December 25 outage", "2025-12-24", "2025-12-27"),
        ("fixed on 2024-02-29", "2024-02-28", "2024-03-02"),
        ("3 days ago", "2026-11-23", "2026-11-26"),
        ("two weeks ago", "2026-11-09", "2026-11-18"),
        ("in 2024", "2023-12-31", "2025-01-02"),
        ("earlier today", "2026-11-26", "2026-11-28"),
        ("last month", "2026-09-25", "2026-11-03"),
    ],
)
def test_periods_a_query_names(query: str, start: str, end: str) -> None:
    assert _day(period_in(query, NOW)) == (start, end)


def test_no_period_and_impossible_days() -> None:
    assert period_in("how do we deploy", NOW) is None
    assert period_in("on 2024-02-31", NOW) is None
    assert period_in("may I ask about the fixtures", NOW) is None


def test_period_holds_by_creation_time() -> None:
    period = Period(NOW - timedelta(days=1), NOW)
    assert period.holds({"created_ts": (NOW - timedelta(hours=1)).timestamp()})
    assert not period.holds({"created_ts": NOW.timestamp()})
    assert not period.holds({"created_ts": True}) and not period.holds({})


def test_filters_apply_as_the_store_would() -> None:
    payload = {"category": "fact", "tags": ["a", "b"], "importance": 0.6}
    assert matches(None, payload)
    assert matches(Filter((MatchValue("category", "fact"), MatchAny("tags", ("b", "z")))), payload)
    assert not matches(Filter((MatchValue("tags", "z"),)), payload)
    assert not matches(Filter((MatchAny("tags", ("z",)),)), payload)
    assert matches(Filter((Range("importance", gte=0.5, lt=0.7),)), payload)
    assert not matches(Filter((Range("importance", gt=0.6),)), payload)
    assert not matches(Filter((Range("importance", lte=0.5),)), payload)
    assert not matches(Filter((Range("importance", gte=0.7),)), payload)
    assert not matches(Filter((Range("importance", lt=0.6),)), payload)
    assert not matches(Filter((Range("category", gte=0.0),)), payload)


def _candidate(point: str, cosine: float, lexical: float, text: str = "a statement") -> Candidate:
    return Candidate(
        point,
        {"content": text, "created_ts": NOW.timestamp()},
        cosine,
        dense_rank=1,
        lexical_rank=1 if lexical else None,
        lexical=lexical,
    )


def test_modes_rank_as_named() -> None:
    found = [_candidate("meaning", 0.7, 0.0), _candidate("words", 0.2, 0.9), _candidate("both", 0.5, 0.6)]
    assert [c.id for c in rank(found, mode="dense")] == ["meaning", "both", "words"]
    assert [c.id for c in rank(found, mode="keyword")][:2] == ["words", "both"]
    assert [c.id for c in rank(found, mode="hybrid")] == ["both", "words", "meaning"]
    assert rank(found, mode="fused")[0].score == pytest.approx(1.0)
    assert all(0.0 <= c.score <= 1.0 for c in rank(found, adjust=lambda _: 5.0))


def test_bearing_counts_each_word_of_the_query_once() -> None:
    repeats = _candidate("repeats", 0.3, 0.5)
    repeats.held = 0.3  # the record says one of the query's words again and again
    plain = _candidate("plain", 0.3, 0.4)
    plain.held = 0.6  # a long record holding its words once scores under what it holds
    ranked = {c.id: c for c in rank([repeats, plain], adjust=lambda _: 1.2)}
    assert ranked["repeats"].score == pytest.approx(1.2 * 0.4)  # the order still reads BM25
    assert ranked["repeats"].bearing == pytest.approx(1.2 * 0.3)
    assert ranked["plain"].bearing == pytest.approx(ranked["plain"].score)  # never above it
    assert all(c.bearing == c.score for c in rank([repeats, plain], mode="keyword"))


def test_a_question_ranks_below_a_statement_and_a_period_above() -> None:
    asked = _candidate("asked", 0.6, 0.6, "What other languages have you worked with?")
    told = _candidate("told", 0.55, 0.55, "I have worked with Python and C++.")
    assert [c.id for c in rank([asked, told])] == ["told", "asked"]
    old = _candidate("old", 0.6, 0.6)
    old.payload["created_ts"] = (NOW - timedelta(days=400)).timestamp()
    recent = _candidate("recent", 0.5, 0.5)
    period = Period(NOW - timedelta(days=2), NOW + timedelta(days=1))
    assert [c.id for c in rank([old, recent], period=period)] == ["recent", "old"]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("test_two_processes_write_at_once went red again", ["test_two_processes_write_at_once"]),
        ("can I sprinkle a few print() calls in the tool code", ["print"]),
        ("can I use numpy in server/tools/code.py?", ["server/tools/code.py"]),
        ("thinking of a time.sleep(2) before the assert", ["time.sleep"]),
        ("it died with WouldBlock", ["wouldblock"]),
        ("is LMS_CONTEXT_MIN_SCORE too high", ["lms_context_min_score"]),
        ("write release notes for version 2.3, e.g. the fixes", []),
        ("what is the GIL and why does CPython have one at all?", []),
        ("how do I center a div", []),
    ],
)
def test_names_a_query_writes_as_code(query: str, wanted: list[str]) -> None:
    assert names_in(query) == wanted


def test_a_record_holding_the_names_ranks_above_one_that_does_not() -> None:
    assert held(["print", "time.sleep"], "Never print() in server/; no time.sleep in tests") == 1.0
    assert held(["print"], "the blueprint of the printer") == 0.0  # not inside a longer name
    assert held([], "anything") == 0.0
    named = _candidate("named", 0.3, 0.2, "stdout belongs to MCP: never print in server/")
    named.named = 1.0
    other = _candidate("other", 0.35, 0.2, "Tool calls are logged as JSON lines")
    assert [c.id for c in rank([other, named])] == ["named", "other"]
    assert [c.id for c in rank([other, named], mode="dense")] == ["other", "named"]


def test_near_duplicates_collapse_to_the_better() -> None:
    ranked = [
        _candidate("a", 0.9, 0.0, "Deploy with fly deploy, never heroku"),
        _candidate("b", 0.8, 0.0, "deploy with fly deploy never heroku!"),
        _candidate("c", 0.7, 0.0, "Redis database 13 for tests"),
    ]
    kept = collapse(ranked, lambda payload: str(payload["content"]), 5)
    assert [c.id for c in kept] == ["a", "c"]
    assert [c.id for c in collapse(ranked, lambda payload: str(payload["content"]), 1)] == ["a"]


async def test_an_exact_name_is_found_where_meaning_misses_it(tmp_path: Path) -> None:
    async with job_run(tmp_path) as run:
        embedder = await run.services.embedder()
        store = await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension))
        notes = {
            "flag": "Set LMS_CAPTURE_KEEP_DAYS to keep session logs longer",
            "deploy": "Deploys go through fly.io; never push to heroku",
            "other": "The billing service owns the invoices table",
        }
        vectors = await embedder.embed(list(notes.values()))
        ids = {name: str(uuid.uuid4()) for name in notes}
        points = [
            PointData(ids[name], vector, {"content": text, "category": "fact"})
            for (name, text), vector in zip(notes.items(), vectors, strict=True)
        ]
        await store.upsert(COLLECTION, points)
        query = "how long are logs kept? LMS_CAPTURE_KEEP_DAYS"
        vector = await query_vector(run, query)
        hybrid = await recall(run, COLLECTION, query, vector)
        assert hybrid[0].id == ids["flag"] and hybrid[0].lexical > 0
        assert [c.named for c in hybrid if c.id == ids["flag"]] == [1.0]
        # The keyword side's finds pass the same filter as the dense side's.
        facts_only = Filter((MatchValue("category", "preference"),))
        assert await recall(run, COLLECTION, query, vector, where=facts_only) == []
        assert await recall(run, "values", query, vector) == []  # no such collection yet
        ones = np.ones(embedder.dimension, dtype=np.float32)
        assert [c.id for c in await recall(run, COLLECTION, "heroku", ones, mode="keyword")] == [
            ids["deploy"]
        ]


def test_events_a_query_tells_its_time_against() -> None:
    assert event_in("how did we deploy before the postgres migration?") == Event(True, "postgres migration")
    assert event_in("what changed since we switched to uv") == Event(False, "switched to uv")
    assert event_in("prior to the outage, what was the timeout") == Event(True, "outage")
    # A longer clause is what the query is about, not when.
    assert event_in("the build fails after the dependency we pinned got updated last night") is None
    assert event_in("before 8 May") is None and event_in("after 3 days") is None
    assert event_in("what is the plan") is None
    when = NOW - timedelta(days=3)
    assert Period.before(when).holds({"created_ts": (when - timedelta(seconds=1)).timestamp()})
    assert not Period.after(when).holds({"created_ts": when.timestamp()})


async def test_records_of_before_an_event_come_first(tmp_path: Path) -> None:
    async with job_run(tmp_path) as run:
        embedder = await run.services.embedder()
        store = await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension))
        notes = [
            ("heroku", "Deploys go through heroku with git push", 5),
            ("migration", "Migrated the invoices database to Postgres 16", 10),
            ("fly", "Deploys go through fly.io with fly deploy", 15),
        ]
        # Other notes, so that the words the deploy notes share are words this store can rank by.
        notes += [(f"other{n}", f"Note {n} about the {topic}", 20) for n, topic in enumerate(TOPICS)]
        ids = {name: str(uuid.uuid4()) for name, _, _ in notes}
        vectors = await embedder.embed([text for _, text, _ in notes])
        points = [
            PointData(
                ids[name],
                vector,
                {"content": text, "created_ts": (NOW - timedelta(days=30 - day)).timestamp()},
            )
            for (name, text, day), vector in zip(notes, vectors, strict=True)
        ]
        await store.upsert(COLLECTION, points)

        async def first(query: str) -> str:
            ranked = await recall(run, COLLECTION, query, await query_vector(run, query), now=NOW)
            return ranked[0].id

        assert await first("how did deploys go before the postgres migration") == ids["heroku"]
        assert await first("how do deploys go since the postgres migration") == ids["fly"]
        # An event no record tells of well enough dates nothing: the ranking is as without it.
        plain = await first("how do deploys go")
        assert await first("how do deploys go before the kubernetes rollout") == plain
