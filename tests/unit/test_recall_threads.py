"""Memories stored one after another by one session are recalled in the light of their
neighbours: an answer that does not name its subject is found beside the question it followed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from learning_memory.server.tools.memory import _next_place
from learning_memory.shared.contracts.memory import COLLECTION
from learning_memory.worker.jobs.memory import INDEXES, _weight
from learning_memory.worker.recall.hybrid import FUSION, Candidate, candidates, rank
from learning_memory.worker.recall.search import query_vector, recall
from learning_memory.worker.recall.threads import in_context, place
from learning_memory.worker.vectors.base import CollectionSpec, Filter, MatchValue, PointData
from tests.helpers import job_run

THREAD = [
    ("Caroline: How did it feel to walk away from the IT job after all those years?", "fact"),
    ("John: At first it was super scary, but I knew I had to make a change for my family.", "event"),
    ("Caroline: That is brave. How are the first weeks at the bakery going?", "fact"),
]
OTHERS = [
    "John: The IT department moved to a new building downtown last spring.",
    "Caroline: My job interview for the IT help desk went well yesterday.",
    "John: I picked up the kids from school and we went hiking.",
    "Caroline: The bakery sells sourdough on weekends.",
    "John: We adopted a puppy named Max.",
    "Caroline: I read a book about leaving your comfort zone.",
]
QUERY = "What made John leave his IT job?"


async def _seed(run: Any) -> dict[str, str]:
    embedder = await run.services.embedder()
    store = await run.services.collection(CollectionSpec(COLLECTION, embedder.dimension, INDEXES))
    texts = [text for text, _ in THREAD] + OTHERS
    vectors = await embedder.embed(texts)
    ids = {text: str(uuid.uuid4()) for text in texts}
    points = []
    for n, ((text, category), vector) in enumerate(zip(THREAD, vectors, strict=False)):
        payload = {"content": text, "category": category, "thread": "s1", "seq": n}
        points.append(PointData(ids[text], vector, payload))
    for n, (text, vector) in enumerate(zip(OTHERS, vectors[len(THREAD) :], strict=True)):
        # Half in another session's thread, half stored before threads existed.
        other: dict[str, Any] = {"content": text, "category": "fact"}
        if n % 2:
            other |= {"thread": "s2", "seq": n}
        points.append(PointData(ids[text], vector, other))
    await store.upsert(COLLECTION, points)
    return ids


async def test_an_answer_is_found_beside_the_question_it_followed(tmp_path: Path) -> None:
    async with job_run(tmp_path, embedding_model="all-MiniLM-L6-v2") as run:
        ids = await _seed(run)
        answer = ids[THREAD[1][0]]
        vector = await query_vector(run, QUERY)
        store = await run.services.vectors()
        metadata = await run.services.metadata()
        alone = rank(await candidates(store, metadata, COLLECTION, QUERY, vector), adjust=_weight)
        read = await recall(run, COLLECTION, QUERY, vector, adjust=_weight)
        before = [c.id for c in alone].index(answer)
        after = [c.id for c in read].index(answer)
        assert after < before and after < 3
        raised = read[after]
        assert raised.score > next(c for c in alone if c.id == answer).score
        scores = [c.score for c in read]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
        # Without the hybrid order nothing is read beside the hits.
        dense = await recall(run, COLLECTION, QUERY, vector, adjust=_weight, mode="dense")
        assert {c.id for c in dense} == {c.id for c in alone if c.dense_rank is not None}


async def test_a_neighbour_the_filter_leaves_out_lends_but_is_not_listed(tmp_path: Path) -> None:
    async with job_run(tmp_path) as run:
        ids = await _seed(run)
        vector = await query_vector(run, QUERY)
        facts = Filter((MatchValue("category", "fact"),))
        read = await recall(run, COLLECTION, QUERY, vector, where=facts, adjust=_weight)
        assert ids[THREAD[1][0]] not in [c.id for c in read]
        assert all(c.payload["category"] == "fact" for c in read)
        store = await run.services.vectors()
        # Nor a neighbour the caller sets aside.
        first = rank(await candidates(store, await run.services.metadata(), COLLECTION, QUERY, vector))
        kept = await in_context(
            store,
            COLLECTION,
            first,
            vector,
            where=None,
            fusion=FUSION,
            period=None,
            adjust=None,
            keep=lambda payload: payload.get("category") != "event",
        )
        listed_before = {c.id for c in first}
        assert all(c.payload["category"] != "event" for c in kept if c.id not in listed_before)
        assert len(kept) >= len(first)


async def test_records_without_a_thread_are_left_as_ranked() -> None:
    ranked = [
        Candidate("a", {"content": "x"}, 0.5, score=0.5),
        Candidate("b", {"thread": "t"}, 0.4, score=0.4),
    ]
    # "b" has a thread but no place in it: nothing is read.
    same = await in_context(
        None,  # type: ignore[arg-type]  # never reached: no hit has a place
        COLLECTION,
        ranked,
        [0.0],
        where=None,
        fusion=FUSION,
        period=None,
        adjust=None,
        keep=lambda payload: True,
    )
    assert same is ranked
    assert place({"thread": "t", "seq": 3}) == ("t", 3)
    assert place({"thread": "t", "seq": True}) is None and place({"seq": 1}) is None


def test_each_session_numbers_its_memories_in_its_own_thread() -> None:
    class Session:
        pass

    one, two = Session(), Session()
    first, second, other = _next_place(one), _next_place(one), _next_place(two)
    assert first[0] == second[0] != other[0]
    assert (first[1], second[1], other[1]) == (0, 1, 0)


def test_hits_next_to_each_other_read_their_thread_once() -> None:
    from learning_memory.worker.recall.threads import _windows

    places = (("a", "t", 10), ("b", "t", 13), ("c", "t", 30), ("d", "u", 0), ("e", "x", None))
    hits = [Candidate(name, {"thread": thread, "seq": seq}, 0.5) for name, thread, seq in places]
    assert _windows(hits) == [("t", 8, 15), ("t", 28, 32), ("u", -2, 2)]
