"""The seed's decision rule, as pure functions: threshold, iteration limit, stagnation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learning_memory.server.loops.rules import Loop, decide, is_stagnant, reason
from learning_memory.shared.errors import ValidationError

NOW = datetime(2026, 1, 15, 10, 30, tzinfo=UTC)


def _loop(threshold: int = 85, max_iterations: int = 5) -> Loop:
    return Loop(
        id="a1b2c3d4",
        loop_type="plan",
        threshold=threshold,
        max_iterations=max_iterations,
        created_at=NOW,
        updated_at=NOW,
    )


def _run(loop: Loop, *scores: int) -> list[Loop]:
    states = []
    for score in scores:
        loop = decide(loop, score, NOW)
        states.append(loop)
    return states


def test_seed_stagnation_example() -> None:
    # The seed: 50, 65 (+15), 70 (+5) is not stagnant; then 73 (+3), 75 (+2) is.
    assert not is_stagnant([50, 65, 70])
    assert is_stagnant([50, 65, 70, 73, 75])
    # +5 is an improvement that counts; +4 is not.
    assert not is_stagnant([50, 54, 59])
    assert is_stagnant([50, 54, 58])
    assert not is_stagnant([10, 11])  # fewer than 3 scores never stagnate


def test_seed_stagnation_example_through_decisions() -> None:
    states = _run(_loop(), 50, 65, 70, 73, 75)
    assert [s.status for s in states] == ["refine", "refine", "refine", "refine", "user_input"]
    last = states[-1]
    assert last.score_history == [50, 65, 70, 73, 75] and last.current_score == 75
    assert last.iteration == 4  # the escalation does not count an iteration
    assert "stagnates" in reason(last) and "+3" in reason(last) and "+2" in reason(last)


def test_falling_scores_stagnate() -> None:
    assert [s.status for s in _run(_loop(), 60, 50, 40)] == ["refine", "refine", "user_input"]


def test_reaching_the_threshold_completes_even_after_stagnation_or_at_the_limit() -> None:
    states = _run(_loop(threshold=85), 40, 60, 85)
    assert states[-1].status == "completed" and states[-1].iteration == 2
    assert "reached the threshold 85" in reason(states[-1])
    # The threshold is checked first: a stagnant history still completes on a high enough score.
    assert _run(_loop(threshold=80), 78, 79, 80)[-1].status == "completed"
    assert _run(_loop(max_iterations=1), 10, 90)[-1].status == "completed"


def test_iteration_limit_sends_the_loop_to_the_user() -> None:
    states = _run(_loop(max_iterations=5), 10, 20, 30, 40, 50, 60)
    assert [s.status for s in states] == ["refine"] * 5 + ["user_input"]
    assert [s.iteration for s in states] == [1, 2, 3, 4, 5, 5]
    assert "after all 5 iterations" in reason(states[-1])
    assert "iteration 5 of 5" in reason(states[-2])


@pytest.mark.parametrize("scores", [(90,), (10, 11, 12)])
def test_a_finished_loop_refuses_more_scores(scores: tuple[int, ...]) -> None:
    finished = _run(_loop(), *scores)[-1]
    with pytest.raises(ValidationError, match="initialize_refinement_loop"):
        decide(finished, 99, NOW)


@pytest.mark.parametrize("score", [-1, 101, 10**9])
def test_a_score_outside_the_range_is_refused_with_the_range(score: int) -> None:
    with pytest.raises(ValidationError, match="between 0 and 100"):
        decide(_loop(), score, NOW)


def test_reason_before_any_score() -> None:
    assert "No score yet" in reason(_loop())


@given(
    threshold=st.integers(1, 100),
    max_iterations=st.integers(1, 20),
    scores=st.lists(st.integers(0, 100), min_size=1, max_size=30),
)
def test_every_history_ends_or_keeps_refining_within_its_limits(
    threshold: int, max_iterations: int, scores: list[int]
) -> None:
    loop = _loop(threshold, max_iterations)
    for score in scores:
        if loop.status in ("completed", "user_input"):
            break
        before = loop
        loop = decide(loop, score, NOW)
        assert loop.iteration <= max_iterations
        assert loop.score_history == [*before.score_history, score]
        if score >= threshold:
            assert loop.status == "completed"
        elif loop.status == "refine":
            assert loop.iteration == before.iteration + 1
        else:
            assert loop.status == "user_input" and loop.iteration == before.iteration
