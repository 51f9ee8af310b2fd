"""When the prompt hook speaks: the best record decides whether anything is shown, then records a
little below the bar come with it."""

from __future__ import annotations

from learning_memory.shared.contracts.context import ContextKind
from learning_memory.shared.fix_feedback import NONE
from learning_memory.worker.jobs.context import (
    FOLLOWER_GAP,
    FOLLOWER_SHARE,
    RELEVANT,
    RELEVANT_MIN_COSINE,
    _leaders_first,
    _worth_saying,
)
from learning_memory.worker.recall.hybrid import Candidate

BAR = 0.38


def hit(
    name: str, cosine: float, score: float = 0.0, bearing: float | None = None
) -> tuple[ContextKind, Candidate]:
    """A ranked record; its bearing is its relevance unless told (no word repeated)."""
    share = 1.0 if bearing is None or not score else bearing / score
    return "memory", Candidate(id=name, payload={}, cosine=cosine, score=score, unrepeated=share)


def names(found: list[tuple[ContextKind, Candidate]]) -> list[str]:
    return [candidate.id for _, candidate in found]


def test_nothing_is_said_unless_the_best_record_clears_the_bar() -> None:
    below = [hit("a", BAR - 0.01, 0.3), hit("b", BAR - FOLLOWER_GAP, 0.2)]
    assert _worth_saying(below, BAR) == []


def test_records_just_under_the_bar_come_with_the_best() -> None:
    found = [
        hit("best", BAR + 0.02),
        hit("near", BAR - FOLLOWER_GAP + 0.01),
        hit("far", BAR - FOLLOWER_GAP - 0.01),
    ]
    assert names(_worth_saying(found, BAR)) == ["best", "near"]


def test_a_record_relevant_on_both_sides_speaks_whatever_its_cosine() -> None:
    found = [
        hit("named", RELEVANT_MIN_COSINE, RELEVANT),
        hit("near", BAR - 0.05, 0.25),
        hit("weak", 0.1, 0.1),
    ]
    assert names(_worth_saying(found, BAR)) == ["named", "near"]


def test_a_caller_bar_above_the_relevance_holds_for_both() -> None:
    found = [hit("a", 0.5, 0.6), hit("b", 0.3, 0.9)]
    assert names(_worth_saying(found, 0.8)) == ["b"]
    assert _worth_saying(found, 1.0) == []


def test_a_near_cosine_alone_does_not_follow_a_far_better_record() -> None:
    best = hit("best", 0.6, 0.7)
    below_share = FOLLOWER_SHARE * 0.7 - 0.01
    found = [best, hit("topic", BAR - 0.02, below_share), hit("peer", BAR - 0.02, RELEVANT - 0.01)]
    assert names(_worth_saying(found, BAR)) == ["best", "peer"]


def test_repeating_the_prompts_words_does_not_make_a_record_speak() -> None:
    # "write release notes for version 2.3" against a lesson saying "version" three times: more
    # about versions, which ranks it first, but holding no more of the prompt.
    repeats = hit("versions", RELEVANT_MIN_COSINE + 0.1, RELEVANT + 0.01, bearing=RELEVANT - 0.03)
    assert _worth_saying([repeats], BAR) == []
    # Once the prompt bears on the store, its relevance still counts as a follower's.
    assert names(_worth_saying([repeats, hit("leader", BAR, 0.3)], BAR)) == ["versions", "leader"]


def test_a_keyword_match_far_off_in_meaning_says_nothing() -> None:
    # "hi! how are you doing today?" against a note on date.today(): one shared word, no meaning.
    assert _worth_saying([hit("today", RELEVANT_MIN_COSINE - 0.15, 0.55)], BAR) == []


def test_followers_are_shown_after_every_leader() -> None:
    """A follower goes with its leaders; it does not take a leader's place in the few shown."""
    weighed = [
        (kind, candidate, NONE)
        for kind, candidate in [
            hit("leader", BAR + 0.1, 0.40),
            hit("follower", BAR - 0.02, 0.30),
            hit("last leader", BAR + 0.07, 0.29),
        ]
    ]
    ordered = _leaders_first(weighed, BAR)
    assert [candidate.id for _, candidate, _ in ordered] == ["leader", "last leader", "follower"]
